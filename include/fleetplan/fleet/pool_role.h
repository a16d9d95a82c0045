// PoolRole: what a replica serves — whole requests (mixed), prompts only (prefill), or
// requests whose prompt was computed elsewhere (decode). The kernel keeps one router per
// role set; the prefill/decode pools (pools.h, disaggregation.h) give the roles meaning.
// Thread model: value types.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fleetplan {

// Values reach JSON by name (PoolRoleName) and the scenario format: never renumber.
enum class PoolRole : int { kMixed = 0, kPrefill = 1, kDecode = 2 };
std::string_view PoolRoleName(PoolRole role);
// "mixed", "prefill", "decode" (index = enum value).
const std::vector<std::string>& PoolRoleNames();

}  // namespace fleetplan
