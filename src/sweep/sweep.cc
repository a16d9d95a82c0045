#include "fleetplan/sweep/sweep.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fleetplan/sweep/point.h"
#include "fleetplan/sweep/summary.h"

namespace fleetplan {
namespace {

// Runs `work(i)` for i in [0, n) on `jobs` threads, handing out indices in order.
void ParallelFor(size_t n, int jobs, const std::function<void(size_t)>& work) {
  const size_t threads = std::clamp<size_t>(static_cast<size_t>(std::max(jobs, 1)), 1, std::max<size_t>(n, 1));
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t i = next++; i < n; i = next++) work(i);
  };
  if (threads == 1) {
    loop();
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(loop);
  for (std::thread& t : pool) t.join();
}

}  // namespace

Expected<Shard> ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  auto bad = [&] {
    return UsageError(fmt::format("--shard: expected I/N with 0 <= I < N (e.g. 0/4), got '{}'", text));
  };
  if (slash == std::string_view::npos) return bad();
  Shard s;
  try {
    size_t used_i = 0, used_n = 0;
    const std::string i(text.substr(0, slash)), n(text.substr(slash + 1));
    s.index = std::stoll(i, &used_i);
    s.count = std::stoll(n, &used_n);
    if (used_i != i.size() || used_n != n.size()) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count) return bad();
  return s;
}

std::vector<int64_t> ShardIndices(const SweepSpec& spec, const Shard& shard) {
  std::vector<int64_t> out;
  for (int64_t i = shard.index; i < spec.points(); i += shard.count) out.push_back(i);
  return out;
}

std::vector<Json> RunSweepPoints(const SweepSpec& spec, const std::vector<int64_t>& indices, int jobs,
                                 const PointDoneFn& on_done) {
  std::vector<Json> rows(indices.size());
  std::vector<char> valid(indices.size(), 0);
  std::vector<int64_t> gpus(indices.size(), 0);
  // Every point is bound before any simulation starts.
  ParallelFor(indices.size(), jobs, [&](size_t i) {
    std::optional<Json> invalid = CheckPoint(spec, PointAt(spec, indices[i]), &gpus[i]);
    if (invalid) {
      rows[i] = std::move(*invalid);
    } else {
      valid[i] = 1;
    }
  });
  std::atomic<int64_t> done{0}, failed{0};
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!valid[i]) ++done;
  }
  if (on_done) on_done(done, failed);
  std::vector<size_t> to_run;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (valid[i]) to_run.push_back(i);
  }
  // Largest fleets first, so the last points to finish are short ones and no thread idles
  // through a long tail. Rows are stored by index: the order changes no output byte.
  std::stable_sort(to_run.begin(), to_run.end(), [&](size_t a, size_t b) { return gpus[a] > gpus[b]; });
  std::mutex progress_mu;
  ParallelFor(to_run.size(), jobs, [&](size_t k) {
    const size_t i = to_run[k];
    rows[i] = RunPoint(spec, PointAt(spec, indices[i]));
    const bool bad = rows[i]["status"] != "ok";
    const int64_t d = ++done;
    const int64_t f = bad ? ++failed : failed.load();
    if (on_done) {
      std::lock_guard<std::mutex> lock(progress_mu);
      on_done(d, f);
    }
  });
  return rows;
}

Json PartialJson(const SweepSpec& spec, const Shard& shard, std::vector<Json> rows) {
  return {{"kind", "fleetplan-sweep-partial"},
          {"spec", spec.Describe()},
          {"shard", {{"index", shard.index}, {"count", shard.count}}},
          {"points", std::move(rows)}};
}

Expected<Json> MergePartials(const std::vector<Json>& partials, const std::vector<std::string>& names) {
  if (partials.empty()) return UsageError("sweep merge: no partial results given");
  for (size_t i = 0; i < partials.size(); ++i) {
    const Json& p = partials[i];
    if (!p.is_object() || p.value("kind", "") != "fleetplan-sweep-partial" || !p.contains("spec") ||
        !p.contains("shard") || !p.contains("points")) {
      return InvalidInput(fmt::format("{}: not a partial sweep result (written by `fleetplan sweep --shard I/N`)", names[i]));
    }
  }
  const std::string digest = partials[0]["spec"]["digest"].get<std::string>();
  const int64_t count = partials[0]["shard"]["count"].get<int64_t>();
  std::map<int64_t, std::string> seen;
  for (size_t i = 0; i < partials.size(); ++i) {
    const Json& p = partials[i];
    if (p["spec"]["digest"] != digest) {
      return InvalidInput(fmt::format("{} is a shard of another sweep spec ({}) than {} ({}); merge shards of one spec only",
                                      names[i], p["spec"]["digest"].get<std::string>(), names[0], digest));
    }
    if (p["shard"]["count"].get<int64_t>() != count) {
      return InvalidInput(fmt::format("{} is shard {}/{} but {} is one of {} shards", names[i],
                                      p["shard"]["index"].get<int64_t>(), p["shard"]["count"].get<int64_t>(), names[0], count));
    }
    const int64_t index = p["shard"]["index"].get<int64_t>();
    if (auto it = seen.find(index); it != seen.end()) {
      return InvalidInput(fmt::format("shard {}/{} is given twice: {} and {}", index, count, it->second, names[i]));
    }
    seen[index] = names[i];
  }
  std::vector<std::string> missing;
  for (int64_t s = 0; s < count; ++s) {
    if (!seen.contains(s)) missing.push_back(fmt::format("{}/{}", s, count));
  }
  if (!missing.empty()) {
    return InvalidInput(fmt::format("missing shard{} {} of spec {}", missing.size() > 1 ? "s" : "",
                                    fmt::join(missing, ", "), digest));
  }
  std::vector<Json> rows;
  for (const Json& p : partials) {
    for (const Json& r : p["points"]) rows.push_back(r);
  }
  return SummarizeSweep(partials[0]["spec"], std::move(rows));
}

Expected<std::vector<std::string>> WriteSweep(const Json& sweep, const std::string& dir) {
  FP_ASSIGN_OR_RETURN(std::string json, PrettyJson(sweep));
  const std::string json_path = dir + "/sweep.json";
  const std::string csv_path = dir + "/sweep.csv";
  FP_RETURN_IF_ERROR(WriteFileAtomic(json_path, json));
  FP_RETURN_IF_ERROR(WriteFileAtomic(csv_path, SweepCsv(sweep)));
  return std::vector<std::string>{json_path, csv_path};
}

}  // namespace fleetplan
