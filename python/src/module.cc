// fleetplan._core: the native part of the Python package (python/README.md). It parses
// Python arguments, calls libfleetplan and hands back what the CLI would print: report
// JSON text, record columns, verb output. The Python API (fleetplan/__init__.py) is
// built on these functions; users do not call them directly.
//
// Scenarios arrive as a (kind, value, display name, folder) source:
//   ("atlas", "", ...)             LoadAtlasScenario (as `fleetplan simulate` with no file)
//   ("path", PATH, ...)            LoadScenario(PATH)  (as `fleetplan simulate PATH`)
//   ("text", YAML, NAME, FOLDER)   LoadScenarioText: errors are located in NAME, relative
//                                  paths resolve against FOLDER
// Sweep specs arrive the same way ("path" or "text"). The GIL is released while
// scenarios and specs are read, bound and simulated, and while verbs run; a sweep's points
// run on its own threads.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/verbs.h"
#include "errors.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/decision/atlas_bundle.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/metrics/record.h"
#include "fleetplan/sweep/spec.h"
#include "fleetplan/sweep/summary.h"
#include "fleetplan/sweep/sweep.h"
#include "records.h"
#include "tree.h"

namespace py = pybind11;

namespace fleetplan::python {
namespace {

struct ScenarioSource {
  std::string kind;
  std::string value;
  std::string display_name;
  std::string dir;
};

// Without the GIL.
Expected<Scenario> Load(const ScenarioSource& s) {
  if (s.kind == "atlas") return LoadAtlasScenario();
  if (s.kind == "path") return LoadScenario(s.value);
  if (s.kind == "text") return LoadScenarioText(s.value, s.display_name, s.dir);
  return InternalError("unknown scenario source kind '" + s.kind + "'");
}

ScenarioSource Source(std::string kind, std::string value, std::string display_name, std::string dir) {
  return ScenarioSource{std::move(kind), std::move(value), std::move(display_name), std::move(dir)};
}

// The scenario's identity and what its reader filled in.
py::dict CheckScenario(const ScenarioSource& source) {
  Expected<Scenario> s = InternalError("not loaded");
  {
    py::gil_scoped_release nogil;
    s = Load(source);
  }
  const Scenario& scenario = ValueOrRaise(std::move(s));
  py::dict d;
  d["name"] = scenario.name;
  d["source"] = scenario.display_name;
  d["digest"] = scenario.digest;
  d["seed"] = scenario.seed;
  d["derived"] = scenario.derived;
  return d;
}

// `duration`: None, a text with a unit ("2m"), or seconds as a number.
std::optional<Duration> DurationArg(const py::object& v) {
  if (v.is_none()) return std::nullopt;
  if (PyUnicode_Check(v.ptr())) {
    Expected<Duration> d = ParsePositiveDuration(v.cast<std::string>());
    if (!d.ok()) RaiseStatus(LocatedError(SourceLocation{}, "duration", d.status().message()));
    return *d;
  }
  if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()))) {
    RaiseStatus(LocatedError(
        SourceLocation{}, "duration",
        "expected a duration with a unit ('2m') or seconds as a number, got " + py::repr(v).cast<std::string>()));
  }
  const double seconds = v.cast<double>();
  if (!(seconds > 0) || seconds > 1e9) {  // as --duration: a run of no time reports on nothing
    RaiseStatus(LocatedError(SourceLocation{}, "duration",
                             "expected seconds > 0 and at most 1e9, got " + py::repr(v).cast<std::string>()));
  }
  return Duration::FromSecondsRounded(seconds);
}

py::dict SimulateScenario(const ScenarioSource& source, std::optional<uint64_t> seed, std::optional<int64_t> requests,
                          const py::object& duration) {
  RunOptions opt;
  opt.write_files = false;
  opt.seed = seed;
  opt.requests = requests;
  opt.duration = DurationArg(duration);
  RecordColumns columns;
  opt.on_record = [&columns](const RequestRecord& r) { columns.Add(r); };
  // Ctrl-C while the run holds no GIL: the progress hook (every few thousand events) takes
  // the GIL for a signal check, and the next request to end stops the run.
  bool interrupted = false;
  opt.progress = [&interrupted](SimTime, int64_t) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) interrupted = true;
  };
  opt.stop_when = [&interrupted](const RequestRecord&) { return interrupted; };
  Expected<RunResult> run = InternalError("not run");
  Expected<std::string> report = InternalError("not run");
  {
    py::gil_scoped_release nogil;
    Expected<Scenario> scenario = Load(source);
    run = scenario.ok() ? RunScenario(*scenario, opt) : Expected<RunResult>(scenario.status());
    if (run.ok() && !interrupted) report = PrettyJson(run->report);  // what `fleetplan simulate --json` prints
  }
  if (interrupted) throw py::error_already_set();  // the KeyboardInterrupt PyErr_CheckSignals raised
  const RunResult& result = ValueOrRaise(std::move(run));
  py::dict d;
  d["report"] = ValueOrRaise(std::move(report));
  d["records"] = columns.ToPython();
  d["classes"] = result.names.classes;
  d["tenants"] = result.names.tenants;
  return d;
}

// `fleetplan sweep SPEC --json` without the files: the sweep document (sweep.json's text).
// `jobs` threads run the points (0: every hardware thread); the bytes are the same for any.
// With `out`, also writes OUT/sweep.json and OUT/sweep.csv, as the CLI does.
std::string SweepSpecJson(const ScenarioSource& source, int jobs, const std::optional<std::string>& out) {
  if (jobs < 0)
    RaiseStatus(LocatedError(SourceLocation{}, "jobs", fmt::format("expected a number of threads >= 1, got {}", jobs)));
  Expected<std::string> text = InternalError("not run");
  {
    py::gil_scoped_release nogil;
    text = [&]() -> Expected<std::string> {
      FP_ASSIGN_OR_RETURN(SweepSpec spec, source.kind == "path"
                                              ? LoadSweepSpec(source.value)
                                              : LoadSweepSpecText(source.value, source.display_name, source.dir));
      const int threads = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      FP_ASSIGN_OR_RETURN(std::unique_ptr<JsonSpool> rows, JsonSpool::Create(spec.points()));
      FP_RETURN_IF_ERROR(RunSweepPoints(spec, ShardIndices(spec, Shard{}), threads, *rows));
      FP_ASSIGN_OR_RETURN(const SweepResult sweep, SummarizeSweep(spec.Describe(), std::move(rows)));
      if (out) {
        FP_ASSIGN_OR_RETURN(const std::vector<std::string> written, WriteSweep(sweep, *out));
        (void)written;
      }
      std::string json;
      FP_RETURN_IF_ERROR(sweep.WriteJson([&json](std::string_view piece) {
        json += piece;
        return Status::Ok();
      }));
      return json;
    }();
  }
  return ValueOrRaise(std::move(text));
}

// Runs `fleetplan ARGS...` in process; returns (exit code, stdout) for 0 (done) and 1 (the
// verb's check failed: its output is still the answer); raises for the other codes.
std::pair<int, std::string> RunVerb(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"fleetplan"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Status status;
  {
    py::gil_scoped_release nogil;
    status = cli::Run(static_cast<int>(argv.size()), argv.data(), out, err);
  }
  if (!status.ok() && status.code() != StatusCode::kCheckFailed) RaiseStatus(status);
  return {status.exit_code(), out.str()};
}

// `fleetplan plan --print-bundle DIR`: the built-in Atlas plan bundle's files under `dir`;
// returns the bundle file's path (DIR/plan.yaml).
std::string WriteAtlasBundleTo(const std::string& dir) {
  Status status;
  {
    py::gil_scoped_release nogil;
    status = WriteAtlasBundle(dir);
  }
  if (!status.ok()) RaiseStatus(status);
  return dir + "/plan.yaml";
}

}  // namespace
}  // namespace fleetplan::python

PYBIND11_MODULE(_core, m) {
  using namespace fleetplan;
  using namespace fleetplan::python;
  m.doc() = "fleetplan's native part; use the fleetplan package, not this module.";
  m.def("atlas_yaml", [] { return std::string(AtlasScenarioYaml()); });
  m.def("check_scenario", [](std::string kind, std::string value, std::string name, std::string dir) {
    return CheckScenario(Source(std::move(kind), std::move(value), std::move(name), std::move(dir)));
  });
  m.def("simulate", [](std::string kind, std::string value, std::string name, std::string dir,
                       std::optional<uint64_t> seed, std::optional<int64_t> requests, const py::object& duration) {
    return SimulateScenario(Source(std::move(kind), std::move(value), std::move(name), std::move(dir)), seed, requests,
                            duration);
  });
  m.def("sweep", [](std::string kind, std::string value, std::string name, std::string dir, int jobs,
                    std::optional<std::string> out) {
    return SweepSpecJson(Source(std::move(kind), std::move(value), std::move(name), std::move(dir)), jobs, out);
  });
  m.def("run_verb", &RunVerb);
  m.def("write_atlas_bundle", &WriteAtlasBundleTo);
  m.def("yaml_to_tree", &YamlToTree);
  m.def("tree_to_yaml", &TreeToYaml);
  std::vector<std::string> statuses;
  for (int i = 0; i < kRecordStatusCount; ++i) {
    statuses.emplace_back(RecordStatusName(static_cast<RecordStatus>(i)));
  }
  m.attr("record_statuses") = statuses;
}
