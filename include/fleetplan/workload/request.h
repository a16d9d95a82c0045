// A request as the simulator sees it: who sent it, when, what its prompt is made of, and
// how long its answer will be.
//
// The prompt is a layout of segments, each a content identity and a length — no token
// ids. Two prompts that start with the same segments (same ids, same lengths) share a
// prefix token for token; the prefix cache later derives block identities from this
// layout (a block that lies inside segment S at offset o has content (S.content, o)).
// Kinds of segment a generator emits: tenant instructions (same id for every request of
// a tenant), a document from a pool, a conversation history (the previous turn's whole
// prompt + answer), a unique suffix (an id no other request uses), or a trace block
// (Mooncake `hash_ids`, 512 tokens each).
//
// Requests are small value types with dense ids (0, 1, 2, ... in arrival order) and
// small integer handles for class, tenant and adapter; names live in a WorkloadNames
// table, so a 10-million-request run holds no strings per request.
// Thread model: value types.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

using RequestId = int64_t;
using ClassId = int32_t;
using TenantId = int32_t;    // kNoTenant when the workload has none
using AdapterId = int32_t;   // kNoAdapter for the base model

inline constexpr TenantId kNoTenant = -1;
inline constexpr AdapterId kNoAdapter = -1;

// Content identity of a segment. Equal ids promise equal token content.
using ContentId = uint64_t;

struct PromptSegment {
  ContentId content = 0;
  int64_t tokens = 0;  // > 0
  bool operator==(const PromptSegment&) const = default;
};

struct Request {
  RequestId id = 0;
  ClassId class_id = 0;
  TenantId tenant = kNoTenant;
  AdapterId adapter = kNoAdapter;
  int32_t priority = 0;          // larger = more important
  SimTime arrival;
  std::vector<PromptSegment> prompt;
  int64_t output_tokens = 0;     // tokens the answer will have (>= 1)
  std::optional<SimTime> deadline;   // absolute; work finishing later is worthless
  std::optional<SimTime> cancel_at;  // absolute; the client gives up at this time
  int64_t session = -1;          // conversation id, -1 when not conversational
  int32_t turn = 0;              // turn within the session (0 = first)
  // -1: the router chooses. Otherwise the replica this request was addressed to (an
  // emulator's port): every routing choice whose candidates include it takes it, and the
  // others (a prefill replica for its prompt) are the router's.
  int32_t pinned_replica = -1;

  int64_t prompt_tokens() const {
    int64_t n = 0;
    for (const auto& s : prompt) n += s.tokens;
    return n;
  }
  bool operator==(const Request&) const = default;
};

// Names behind the integer handles; index = handle.
struct WorkloadNames {
  std::vector<std::string> classes;
  std::vector<std::string> tenants;
  std::vector<std::string> adapters;
};

}  // namespace fleetplan
