// `fleetplan sweep SPEC.yaml` and `fleetplan sweep merge DIR... --out DIR`: many
// simulations over the axes of a spec, on threads, MPI ranks or shards (sweep/sweep.h).
// Parses, calls libfleetplan, prints.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli/verbs.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/core/progress.h"
#include "fleetplan/core/wording.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/report/sweep_page.h"
#include "fleetplan/sweep/point.h"
#include "fleetplan/sweep/spec.h"
#include "fleetplan/sweep/spool.h"
#include "fleetplan/sweep/summary.h"
#include "fleetplan/sweep/sweep.h"

namespace fleetplan::cli {
namespace {

struct SweepFlags {
  std::string spec;
  std::string out;
  std::optional<int> jobs;  // not given: every hardware thread
  bool mpi = false;
  std::string shard;
  bool json = false;
  bool quiet = false;
  bool no_html = false;
  std::vector<std::string> merge_dirs;
  std::string merge_out;
};

constexpr const char* kPartialFile = "sweep-partial.json";

int DefaultJobs() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The page shows this many configurations at most (all of them are in sweep.json and
// sweep.csv): a table of 10^5 rows is no page anyone reads, and the page is rendered in
// memory.
constexpr int64_t kPageConfigurations = 1000;
constexpr int64_t kPageCurves = 16;

TextSink StreamSink(std::ostream& out) {
  return [&out](std::string_view text) {
    out << text;
    return out ? Status::Ok() : InvalidInput("cannot write to standard output");
  };
}

Status Finish(const SweepResult& sweep, const std::string& dir, bool json, bool html, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(std::vector<std::string> files, WriteSweep(sweep, dir));
  const std::string page = dir + "/sweep.html";
  if (html) {
    FP_ASSIGN_OR_RETURN(const Json view, sweep.PageView(kPageConfigurations, kPageCurves));
    FP_RETURN_IF_ERROR(WriteFileAtomic(page, report::SweepHtml(view)));
    files.push_back(page);
  } else {
    std::vector<std::string> removed;
    FP_RETURN_IF_ERROR(RemoveStaleOutput(page, false, &removed));
  }
  if (json) {
    FP_RETURN_IF_ERROR(sweep.WriteJson(StreamSink(out)));
  } else {
    FP_RETURN_IF_ERROR(sweep.WriteText(StreamSink(out)));
    out << fmt::format("wrote {}\n", fmt::join(files, ", "));
  }
  if (sweep.ok() == 0 && sweep.invalid() > 0 && sweep.failed() == 0) {
    return InvalidInput(fmt::format("every point of the sweep is invalid ({}): no point ran; each one's reason is in "
                                    "{}/sweep.json (`reason`)",
                                    Counted(sweep.invalid(), "point"), dir));
  }
  const int64_t failed = sweep.failed();
  if (failed > 0) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("{} point{} failed while simulating; their errors are in {}/sweep.json (`reason`)",
                              failed, failed == 1 ? "" : "s", dir));
  }
  return Status::Ok();
}

Status RunSweep(const SweepFlags& f, std::ostream& out, std::ostream& err) {
  if (f.jobs && *f.jobs < 1) {
    return UsageError(fmt::format("--jobs: expected a number of threads >= 1, got {}", *f.jobs));
  }
  Shard shard;
  const bool sharded = !f.shard.empty();
  if (sharded) {
    FP_ASSIGN_OR_RETURN(shard, ParseShard(f.shard));
  }
  if (f.mpi) FP_RETURN_IF_ERROR(MpiInit(nullptr, nullptr));
  struct MpiScope {
    bool on;
    ~MpiScope() {
      if (on) MpiFinalize();
    }
  } mpi_scope{f.mpi};
  const bool leader = !f.mpi || MpiRank() == 0;

  FP_ASSIGN_OR_RETURN(SweepSpec spec, LoadSweepSpec(f.spec));
  const std::string dir = f.out.empty() ? fmt::format("out/sweep-{}", spec.name) : f.out;
  const std::vector<int64_t> indices = ShardIndices(spec, shard);
  std::optional<Progress> progress;
  if (leader) {
    progress.emplace(err, sharded ? fmt::format("sweep {} shard {}", spec.name, f.shard) : "sweep " + spec.name,
                     "points", static_cast<int64_t>(indices.size()), ProgressFor(f.quiet));
  }
  const PointDoneFn on_done = [&](int64_t done, int64_t failed) {
    if (progress) progress->Update(done, failed);
  };
  // Rows go to a spool on disk as points complete (only the leader keeps them).
  std::unique_ptr<JsonSpool> rows;
  if (leader) {
    FP_ASSIGN_OR_RETURN(rows, JsonSpool::Create(spec.points()));
  }
  if (f.mpi) {
    FP_RETURN_IF_ERROR(RunSweepPointsMpi(spec, indices, rows.get(), on_done));
    if (!leader) return Status::Ok();  // a worker rank: rank 0 writes the result
  } else {
    FP_RETURN_IF_ERROR(RunSweepPoints(spec, indices, f.jobs.value_or(DefaultJobs()), *rows, on_done));
  }
  if (progress) progress->Finish();

  if (sharded) {
    const std::string path = dir + "/" + kPartialFile;
    FP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Open(path));
    FP_RETURN_IF_ERROR(WritePartial(spec, shard, *rows, file->Sink()));
    FP_RETURN_IF_ERROR(file->Commit());
    out << fmt::format(
        "shard {}: {} of {} points -> {}\ncombine the shards with `fleetplan sweep merge DIR... --out DIR`\n", f.shard,
        indices.size(), spec.points(), path);
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(SweepResult sweep, SummarizeSweep(spec.Describe(), std::move(rows)));
  return Finish(sweep, dir, f.json, !f.no_html, out);
}

Status RunMerge(const SweepFlags& f, std::ostream& out) {
  if (f.merge_out.empty()) return UsageError("sweep merge: --out DIR is required (where sweep.json goes)");
  std::vector<std::string> paths;
  for (const std::string& d : f.merge_dirs) {
    paths.push_back(std::filesystem::is_directory(d) ? d + "/" + kPartialFile : d);
  }
  FP_ASSIGN_OR_RETURN(SweepResult sweep, MergePartials(paths));
  return Finish(sweep, f.merge_out, f.json, !f.no_html, out);
}

}  // namespace

void RegisterSweepVerb(CLI::App& app, VerbAction& action) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* sub = app.add_subcommand(
      "sweep",
      "Simulate every point of a sweep spec — the cartesian product of its axes x its seeds, with an optional\n"
      "max-rate search per point — and report per-configuration figures with 95% intervals, the best\n"
      "configuration per objective and the Pareto front (format: docs/sweep.md).");
  sub->add_option("spec", flags->spec, "Sweep spec YAML (version 1)");
  sub->add_option("--out", flags->out, "Output folder (default: out/sweep-<spec name>)");
  sub->add_option("--jobs", flags->jobs,
                  "Threads running points (default: every hardware thread); output is the same for any N");
  sub->add_flag("--mpi", flags->mpi, "Run points across MPI ranks (under mpirun); rank 0 writes the result");
  sub->add_option("--shard", flags->shard, "Run only the points with index = I (mod N) and write a partial result");
  sub->add_flag("--json", flags->json, "Print sweep.json to stdout instead of the table");
  sub->add_flag("--quiet", flags->quiet, "No progress line on stderr");
  sub->add_flag("--no-html", flags->no_html, "Do not write sweep.html");
  sub->footer(
      "Outputs (under --out): sweep.json (canonical: points, configurations with mean and 95% interval over\n"
      "seeds, best per objective, Pareto front, notes), sweep.csv (one row per point) and sweep.html (the\n"
      "Pareto plot and attainment-against-rate curves, the first 1,000 configurations; opens offline).\n"
      "Rows stream through a scratch file in the temp folder, so memory does not grow with the points.\n"
      "With --shard:\n"
      "sweep-partial.json, combined by `fleetplan sweep merge`.\n"
      "Exit codes: 0 done (invalid points are rows, not errors), 1 a point failed while simulating,\n"
      "2 usage error, 3 invalid spec (located, with did-you-mean over the scenario's key paths).\n"
      "Examples:\n"
      "  fleetplan sweep replicas.yaml --out out/replicas --jobs 2\n"
      "  mpirun -n 4 fleetplan sweep replicas.yaml --mpi --out out/replicas\n"
      "  fleetplan sweep replicas.yaml --shard 0/2 --out out/s0 && fleetplan sweep replicas.yaml --shard 1/2 --out "
      "out/s1\n"
      "  fleetplan sweep merge out/s0 out/s1 --out out/replicas");
  CLI::App* merge =
      sub->add_subcommand("merge", "Combine the partial results of every shard of one spec into sweep.json");
  merge->add_option("dirs", flags->merge_dirs, "Folders (or sweep-partial.json files) of the shards")->required();
  merge->add_option("--out", flags->merge_out, "Output folder")->required();
  merge->add_flag("--json", flags->json, "Print sweep.json to stdout instead of the table");
  merge->add_flag("--no-html", flags->no_html, "Do not write sweep.html");
  merge->footer(
      "Refuses partials of different specs (their digests differ) and a missing or repeated shard, naming it.\n"
      "The result is byte-identical to running the whole sweep at once.\n"
      "Example:\n"
      "  fleetplan sweep merge out/s0 out/s1 out/s2 --out out/sweep");
  merge->callback(
      [flags, &action] { action = [flags](std::ostream& out, std::ostream&) { return RunMerge(*flags, out); }; });
  sub->callback([flags, merge, &action] {
    if (merge->parsed()) return;
    action = [flags](std::ostream& out, std::ostream& err) {
      if (flags->spec.empty()) return UsageError("sweep: a SPEC.yaml is required (format: docs/sweep.md)");
      return RunSweep(*flags, out, err);
    };
  });
}

}  // namespace fleetplan::cli
