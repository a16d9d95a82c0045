// Reports from files: everything `fleetplan report` does short of printing.
//
// Loads the SLO file (optional), picks the records reader (named, or detected from the
// file's first keys), streams the records into a ReportBuilder, and checks that every
// SLO class exists: declared under the scenario's workload.classes, or else present in
// the records. The report lists both inputs with their digests and every assumption the
// reader made.
// Thread model: pure function over files.
#pragma once

#include <optional>
#include <string>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/metrics/report.h"

namespace fleetplan {

struct ReportFilesRequest {
  std::string records_path;
  std::optional<std::string> slo_path;  // none: no objectives; classes come from the records
  std::optional<std::string> format;    // none: detect (metrics/records_io.h)
  std::string default_class = "default";  // for formats without classes
  // --class was given: records that name their own class (fleetplan) refuse it, naming
  // the classes they hold, rather than ignore it.
  bool class_given = false;
  std::optional<Duration> window;       // length from the first arrival
  WindowBy window_by = WindowBy::kArrival;  // which requests the window's rates count
};

Expected<Report> BuildReportFromFiles(const ReportFilesRequest& request);

}  // namespace fleetplan
