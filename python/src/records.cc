#include "records.h"

namespace py = pybind11;

namespace fleetplan::python {
namespace {

template <typename T>
int64_t NanosOr(const std::optional<T>& v) {
  return v ? v->ns() : -1;
}

template <typename T>
py::bytes Bytes(const std::vector<T>& column) {
  return py::bytes(reinterpret_cast<const char*>(column.data()), column.size() * sizeof(T));
}

}  // namespace

void RecordColumns::Add(const RequestRecord& r) {
  id_.push_back(r.id);
  input_tokens_.push_back(r.input_tokens);
  output_tokens_.push_back(r.output_tokens);
  arrival_ns_.push_back(r.arrival.ns());
  first_token_ns_.push_back(NanosOr(r.first_token));
  finish_ns_.push_back(NanosOr(r.finish));
  itl_max_ns_.push_back(NanosOr(r.itl_max));
  queue_age_ns_.push_back(NanosOr(r.queue_age_at_assignment));
  replica_.push_back(r.replica.value_or(-1));
  matched_prefix_tokens_.push_back(r.matched_prefix_tokens.value_or(-1));
  class_id_.push_back(r.class_id);
  tenant_.push_back(r.tenant == kNoTenant ? -1 : r.tenant);
  status_.push_back(static_cast<int8_t>(r.status));
  valid_.push_back(r.valid ? 1 : 0);
}

py::dict RecordColumns::ToPython() const {
  py::dict d;
  d["id"] = Bytes(id_);
  d["input_tokens"] = Bytes(input_tokens_);
  d["output_tokens"] = Bytes(output_tokens_);
  d["arrival_ns"] = Bytes(arrival_ns_);
  d["first_token_ns"] = Bytes(first_token_ns_);
  d["finish_ns"] = Bytes(finish_ns_);
  d["itl_max_ns"] = Bytes(itl_max_ns_);
  d["queue_age_ns"] = Bytes(queue_age_ns_);
  d["replica"] = Bytes(replica_);
  d["matched_prefix_tokens"] = Bytes(matched_prefix_tokens_);
  d["class_id"] = Bytes(class_id_);
  d["tenant"] = Bytes(tenant_);
  d["status"] = Bytes(status_);
  d["valid"] = Bytes(valid_);
  return d;
}

}  // namespace fleetplan::python
