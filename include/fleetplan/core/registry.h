// Registries: a policy or feature kind is a static table of rows, each with a `name`
// (router.h RouterPolicies, scheduling_policy.h SchedulingPolicies, kv_pool.h
// EvictionPolicies). RowNames lists the names in row order, for validation messages
// and docs, so every registry's name list is derived from its rows.
// Thread model: pure functions.
#pragma once

#include <string>
#include <vector>

namespace fleetplan {

// REQUIRES: Row has a `name` convertible to std::string.
template <typename Row>
std::vector<std::string> RowNames(const std::vector<Row>& rows) {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const Row& row : rows) out.emplace_back(row.name);
  return out;
}

}  // namespace fleetplan
