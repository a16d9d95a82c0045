// Helpers for the metrics tests: temporary files and records built by hand.
#pragma once

#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "fleetplan/core/units.h"
#include "fleetplan/metrics/record.h"

namespace fleetplan::testing_util {

// Writes `text` to a file named `name` in the test temp dir; returns its path.
inline std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  out << text;
  return path;
}

inline std::string Fixture(const std::string& name) {
  return std::string(FLEETPLAN_SOURCE_DIR) + "/tests/metrics/data/" + name;
}

// An ok record: arrives at `arrival_ms`, first token after `ttft_ms`, then `output - 1`
// gaps of `gap_ms` each (so TPOT = ITL-max = gap_ms).
inline RequestRecord OkRecord(RequestId id, ClassId cls, int64_t arrival_ms, int64_t ttft_ms,
                              int64_t output, int64_t gap_ms) {
  RequestRecord r;
  r.id = id;
  r.class_id = cls;
  r.arrival = SimTime::FromNanos(Ms(arrival_ms).ns());
  r.first_token = r.arrival + Ms(ttft_ms);
  r.finish = *r.first_token + Ms(gap_ms) * (output - 1);
  r.input_tokens = 100;
  r.output_tokens = output;
  if (output >= 2) r.itl_max = Ms(gap_ms);
  return r;
}

}  // namespace fleetplan::testing_util
