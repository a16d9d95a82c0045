// `fleetplan report --records FILE [--slo FILE] [--window DURATION]
// [--window-by arrival|finish] [--format NAME] [--class NAME] [--json]`: per-class and fleet figures from per-request records
// (metrics/report_files.h). Text by default (an aligned table per class); --json prints
// the canonical JSON report with the inputs' digests. Bad input is exit 3, located.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "cli/verbs.h"
#include "fleetplan/core/flag_error.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/metrics/records_io.h"
#include "fleetplan/metrics/report_files.h"

namespace fleetplan::cli {
namespace {

struct ReportFlags {
  std::string records;
  std::string slo;
  std::string window;
  std::string window_by = "arrival";
  std::string format;
  std::string default_class = "default";
  CLI::Option* class_option = nullptr;
  bool json = false;
};

Status RunReport(const ReportFlags& f, std::ostream& out) {
  ReportFilesRequest request;
  request.records_path = f.records;
  if (!f.slo.empty()) request.slo_path = f.slo;
  if (!f.format.empty()) request.format = f.format;
  request.default_class = f.default_class;
  request.class_given = f.class_option != nullptr && f.class_option->count() > 0;
  if (!f.window.empty()) {
    Expected<Duration> window = ParsePositiveDuration(f.window);
    if (!window.ok()) return FlagValueError("--window", window.status().message());
    request.window = *window;
  }
  const std::optional<WindowBy> by = ParseWindowBy(f.window_by);
  if (!by) {
    return FlagValueError("--window-by",
                        fmt::format("unknown '{}'; expected arrival or finish", f.window_by));
  }
  request.window_by = *by;
  FP_ASSIGN_OR_RETURN(Report report, BuildReportFromFiles(request));
  if (f.json) {
    FP_ASSIGN_OR_RETURN(std::string text, PrettyJson(ReportToJson(report)));
    out << text;
  } else {
    out << FormatReportText(report);
  }
  return Status::Ok();
}

std::string FormatList() {
  std::string names;
  for (const std::string& n : RecordFormatNames()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

}  // namespace

void RegisterReportVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Per-class and fleet figures from per-request records: counts by status, throughput and "
      "goodput over the measurement window, SLO attainment, TTFT / TPOT / ITL-max / E2E "
      "percentiles, E2E by output length. Exit 0 done, 2 usage, 3 invalid input.");
  cmd->footer(
      "Examples:\n"
      "  fleetplan report --records out/requests.jsonl --slo scenario.yaml\n"
      "  fleetplan report --records out/requests.jsonl --window 10m --window-by finish --json\n"
      "  fleetplan report --records bench.json --format vllm-bench --class chat");
  auto flags = std::make_shared<ReportFlags>();
  ReportFlags& f = *flags;
  cmd->add_option("--records", f.records, "Records file (JSONL, or a vLLM bench result JSON)")->required();
  cmd->add_option("--slo", f.slo,
                  "SLO file: a bare `slo:` mapping (class -> objectives) or a whole scenario");
  cmd->add_option("--window", f.window,
                  "Measurement window length from the first arrival, with a unit (e.g. 10m); "
                  "default: first arrival to last finish");
  cmd->add_option("--window-by", f.window_by,
                  "Which requests the window's throughput and goodput count: arrival (those that "
                  "arrived in the window, however late they finish; default) or finish (those that "
                  "finished in it)")
      ->check(CLI::IsMember({"arrival", "finish"}));
  cmd->add_option("--format", f.format, "Records format: " + FormatList() + " (default: detected)");
  f.class_option = cmd->add_option("--class", f.default_class,
                                   "Class of the records in formats without classes: llmservingsim, vllm-bench "
                                   "(default: default; records that name their classes refuse it)");
  cmd->add_flag("--json", f.json, "Print the canonical JSON report instead of text");
  cmd->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& /*err*/) { return RunReport(*flags, out); };
  });
}

}  // namespace fleetplan::cli
