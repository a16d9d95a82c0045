#include "fleetplan/core/flag_error.h"
#include "fleetplan/metrics/report_files.h"

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/metrics/records_io.h"

namespace fleetplan {
namespace {

Expected<std::unique_ptr<RecordReader>> ReaderFor(const ReportFilesRequest& request, std::string* format) {
  if (request.format) {
    *format = *request.format;
    Expected<std::unique_ptr<RecordReader>> reader = MakeRecordReader(*format, {request.default_class, "--class"});
    if (!reader.ok()) return FlagValueError("--format", reader.status().message());
    return reader;
  }
  FP_ASSIGN_OR_RETURN(*format, DetectRecordFormat(request.records_path));
  return MakeRecordReader(*format, {request.default_class, "--class"});
}

// A bare SLO file names classes that must then occur in the records; a scenario declares
// its classes under workload.classes, where a class may have no requests in a run.
Status CheckSloClassesExist(const SloFile& slo, const ReportBuilder& builder, const std::string& records) {
  if (slo.classes_from_workload) return Status::Ok();
  const std::vector<std::string>& classes = builder.classes();
  std::vector<std::string> present;
  for (size_t i = 0; i < classes.size(); ++i) {
    if (builder.RequestsOf(static_cast<ClassId>(i)) > 0) present.push_back(classes[i]);
  }
  for (const ClassSlo& c : slo.slo.classes()) {
    if (std::find(present.begin(), present.end(), c.name) != present.end()) continue;
    std::string message = fmt::format("no record in '{}' has class '{}'", records, c.name);
    const std::string near = DidYouMean(c.name, present);
    if (!near.empty()) message += fmt::format("; did you mean '{}'?", near);
    message += fmt::format(" (classes in the records: {})", fmt::join(present, ", "));
    return LocatedError(c.where, c.path, message);
  }
  return Status::Ok();
}

}  // namespace

Expected<Report> BuildReportFromFiles(const ReportFilesRequest& request) {
  if (request.window && *request.window <= Duration()) {
    return FlagValueError("--window",
                        fmt::format("expected a duration > 0, got '{}'", FormatDuration(*request.window)));
  }
  std::optional<SloFile> slo;
  if (request.slo_path) {
    FP_ASSIGN_OR_RETURN(slo, LoadSloFile(*request.slo_path));
  }
  std::string format;
  FP_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, ReaderFor(request, &format));
  std::vector<std::string> classes;
  std::string hint;
  if (slo) {
    classes = slo->declared_classes;
    hint = fmt::format("the classes are those {} declares{}", slo->path,
                       slo->classes_from_workload ? " under workload.classes" : "");
  }
  FP_ASSIGN_OR_RETURN(ReportBuilder builder,
                      ReportBuilder::Create(classes, slo ? slo->slo : SloSpec(), /*open_classes=*/!slo, hint));
  FP_ASSIGN_OR_RETURN(RecordsFileInfo info, reader->Read(request.records_path, builder));
  if (request.class_given && format == "fleetplan") {
    std::vector<std::string> present;
    for (size_t i = 0; i < builder.classes().size(); ++i) {
      if (builder.RequestsOf(static_cast<ClassId>(i)) > 0) present.push_back(builder.classes()[i]);
    }
    std::string message = fmt::format("fleetplan records name each record's class (classes in '{}': {})",
                                      request.records_path, fmt::join(present, ", "));
    message += "; --class sets the class of records in formats without one (llmservingsim, vllm-bench): drop it";
    return UsageError(FormatLocatedError(SourceLocation{}, "--class", message));
  }
  if (slo) FP_RETURN_IF_ERROR(CheckSloClassesExist(*slo, builder, request.records_path));
  ReportOptions options;
  options.window = request.window;
  options.window_by = request.window_by;
  if (!request.window && info.stated_window) {
    // The file states its own window (vllm-bench without start_times): use it.
    options.window = info.stated_window;
    options.window_source = fmt::format("{}: duration", info.format);
  }
  Expected<Report> finished = std::move(builder).Finish(options);
  if (!finished.ok()) return InvalidInput(fmt::format("{}: {}", request.records_path, finished.status().message()));
  Report report = std::move(finished).value();
  report.inputs.push_back(ReportInput{"records", request.records_path, format, info.digest});
  if (slo) {
    report.inputs.push_back(ReportInput{"slo", slo->path, slo->is_scenario ? "scenario" : "slo", slo->digest});
  }
  report.notes = info.notes;
  if (!request.format) report.notes.insert(report.notes.begin(), fmt::format("records format '{}' detected from the file's keys", format));
  return report;
}

}  // namespace fleetplan
