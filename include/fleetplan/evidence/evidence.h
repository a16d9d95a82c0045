// Evidence: an input a decision rests on, identified and dated (docs/evidence.md).
//
// An evidence file (YAML or JSON) opens with a header, the rest is its data:
//
//   evidence:
//     kind: benchmark                  # inventory, price, benchmark, step-profile, trace,
//                                      # quality-eval, canary-metrics, ... (a word)
//     revision: sha256:...             # optional: the content digest when absent; a named
//                                      # revision pins one ("bench-2026-11@sha256:...")
//     observed_at: 2026-11-20T10:00:00Z
//     expires_at: 2026-12-20T00:00:00Z # optional; or a maximum age set by policy
//     source: vllm bench serve, pool a
//   data: ...
//
// Freshness is judged against one explicit time (`--as-of`), never the wall clock, so the
// same inputs give the same verdict on every rerun (as TUF checks every expiry against a
// fixed time). Times are UTC, RFC 3339 with seconds ("2026-11-20T10:00:00Z"; an offset
// "+02:00" is accepted and converted).
// Thread model: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

// Seconds since 1970-01-01T00:00:00Z.
struct UtcTime {
  int64_t seconds = 0;
  auto operator<=>(const UtcTime&) const = default;
};
// RFC 3339 with seconds and a zone ("Z" or "+hh:mm"); years 1970..9999. Errors start
// with "expected a UTC time".
Expected<UtcTime> ParseUtcTime(std::string_view text);
std::string FormatUtcTime(UtcTime t);  // "YYYY-MM-DDTHH:MM:SSZ"

struct EvidenceHeader {
  std::string kind;
  std::string revision;  // as written, or the content digest
  std::string content_digest;  // "sha256:..." of the file's bytes
  UtcTime observed_at;
  std::optional<UtcTime> expires_at;
  std::string source;
};

// Reads the header of an evidence file's bytes. Errors are located in `display_name`.
// A revision that names a digest ("...sha256:<hex>" or "sha256:<hex>") must be the
// content's: a pinned revision that does not match is an error naming both.
Expected<EvidenceHeader> ReadEvidenceHeader(std::string_view bytes, const std::string& display_name);
Expected<EvidenceHeader> ReadEvidenceFile(const std::string& path);

// Values reach JSON by name (FreshnessName): explicit, never renumber.
enum class Freshness : int { kFresh = 0, kExpired = 1, kNotYetObserved = 2 };
std::string_view FreshnessName(Freshness f);

struct FreshnessVerdict {
  Freshness state = Freshness::kFresh;
  std::optional<UtcTime> expires;  // the earlier of expires_at and observed_at + max age
  std::string reason;              // one sentence naming the input, its expiry and the as-of
};
// `max_age_s`: the policy's maximum age for this kind, if any.
FreshnessVerdict JudgeFreshness(const EvidenceHeader& h, UtcTime as_of, std::optional<int64_t> max_age_s,
                                std::string_view name);
Json FreshnessJson(const EvidenceHeader& h, const FreshnessVerdict& v);

}  // namespace fleetplan
