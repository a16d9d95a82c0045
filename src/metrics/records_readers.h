// The record readers, one per format (records_<format>.cc). Internal to the metrics
// module; MakeRecordReader (records_io.cc) is the one public factory.
#pragma once

#include <memory>

#include "fleetplan/metrics/records_io.h"

namespace fleetplan::metrics_detail {

std::unique_ptr<RecordReader> MakeFleetplanReader();
std::unique_ptr<RecordReader> MakeLlmServingSimReader(const RecordReadOptions& options);
std::unique_ptr<RecordReader> MakeVllmBenchReader(const RecordReadOptions& options);

}  // namespace fleetplan::metrics_detail
