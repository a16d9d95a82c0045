// The per-request records of a run, kept as columns (one contiguous array per field) so
// that Python turns a million of them into a numpy structured array with a few copies
// (fleetplan/_records.py), or into the dicts requests.jsonl holds when numpy is absent.
//
// Columns and their encodings (little-endian, as the host): 
//   id, input_tokens, output_tokens                   int64
//   arrival_ns, first_token_ns, finish_ns,
//   itl_max_ns, queue_age_ns                          int64 nanoseconds; -1 when absent
//   replica, matched_prefix_tokens                    int64; -1 when absent
//   class_id, tenant                                  int32 handles into RunResult::names
//                                                     (tenant -1: none)
//   status                                            int8 RecordStatus value
//   valid                                             uint8 0 / 1
// Thread model: Add without the GIL (a plain C++ value); ToPython with it.
#pragma once

#include <cstdint>
#include <vector>

#include <pybind11/pybind11.h>

#include "fleetplan/metrics/record.h"

namespace fleetplan::python {

class RecordColumns {
 public:
  void Add(const RequestRecord& r);
  size_t size() const { return id_.size(); }
  // {column name: bytes}, the encodings above.
  pybind11::dict ToPython() const;

 private:
  std::vector<int64_t> id_, input_tokens_, output_tokens_, arrival_ns_, first_token_ns_, finish_ns_, itl_max_ns_,
      queue_age_ns_, replica_, matched_prefix_tokens_;
  std::vector<int32_t> class_id_, tenant_;
  std::vector<int8_t> status_;
  std::vector<uint8_t> valid_;
};

}  // namespace fleetplan::python
