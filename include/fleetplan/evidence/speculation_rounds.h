// A speculation rounds file: what a speculative decoder measured, one round per line.
// The speculation gate (gates/speculation.h) judges it; the simulator's
// `engine.speculation.acceptance: {rounds: FILE}` draws acceptance from it.
//
//   {"draft": [11, 12, 13], "target": [11, 12, 99], "draft_ms": 3.0, "verify_ms": 9.0,
//    "seq": "r7", "batch": 16, "error": null}
// `target` holds the target model's token at each drafted position (same length as
// `draft`, at least one); `seq` (string or integer), `batch` (integer >= 1) and `error`
// (null or a string) are optional. An optional first line `{"identity": {...}}` names the
// evidence (evidence/identity.h). Blank lines are skipped; every other problem is a
// located error (file:line:col: field: message).
//
// Accepted tokens of a round: the longest prefix where draft and target agree.
// Acceptance by position j = 1..k_max over the rounds:
//   conditional[j] = #(a >= j) / #(a >= j - 1 and k >= j)  (accepted j given the j - 1
//                    before were and j was drafted; 0 when no round got there)
//   cumulative[j]  = #(a >= j) / #rounds   (vLLM's cumulative per-position acceptance)
// Thread model: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/evidence/identity.h"

namespace fleetplan {

struct SpecRound {
  std::vector<int64_t> draft;
  std::vector<int64_t> target;
  Duration draft_time;
  Duration verify_time;
  std::string seq;               // "" when not given
  std::optional<int64_t> batch;
  std::string error;             // "" when none
  int64_t line = 0;              // 1-based line in the file
};

struct SpecRounds {
  std::string file;              // as the user named it
  EvidenceIdentity identity;
  std::vector<SpecRound> rounds;
};

Expected<SpecRounds> ParseSpecRounds(std::string_view text, const std::string& display_name);
Expected<SpecRounds> LoadSpecRounds(const std::string& path);

// Accepted tokens of one round: the longest common prefix of draft and target.
int64_t AcceptedTokens(const SpecRound& r);

struct PositionAcceptance {
  int64_t max_draft = 0;             // k_max: the most tokens any round drafted
  std::vector<double> conditional;   // index j - 1
  std::vector<double> cumulative;
  std::vector<int64_t> eligible;     // index j - 1: rounds that could accept position j
};
// REQUIRES: !rounds.rounds.empty().
PositionAcceptance AcceptanceByPosition(const SpecRounds& rounds);

}  // namespace fleetplan
