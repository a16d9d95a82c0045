// The vLLM version a scenario models (`engine.version`) and what it changes: the CPU time
// of a step that the GPU waits for, when the scenario does not state `engine.host_overhead`
// (the table below); the scenario reader also takes from its generation the default of
// `engine.prefix_cache.enabled` and the engine's admission rules under KV pressure
// (engine/engine.h EngineConfig, kV0AdmissionWatermark).
//
//   generation   versions                 host overhead per step (default)
//   v0           < 0.8                    kV0HostPerStep + kV0HostPerExtraRank × (tp − 1)
//   v1           0.8 ≤ v < 0.12           kV1HostPerStep
//   v1-async     ≥ 0.12                   0 (async scheduling, on by default from 0.12,
//                                           overlaps it with the forward pass)
//
// Where the figures come from (docs/step-models.md "Engine versions", docs/FIDELITY.md):
// kV0* are fitted, leave-one-out, on the published vLLM 0.6.3 H100 / H200 batch-latency
// runs against the default step model (each held-out run predicted from the other three);
// V0 hands every step's inputs to each tensor-parallel worker, hence the per-rank term.
// kV1HostPerStep carries V0's single-GPU term to V1, whose scheduler hands the step to its
// workers once through shared memory (no per-rank term); no shared run measures V1 without
// async scheduling on a GPU with measured kernels. Async scheduling's 0 rests on the three
// vLLM 0.19 runs, replayed with zero host overhead within ±4 % TPOT.
//
// Thread model: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/perf/host_overhead.h"

namespace fleetplan {

enum class VllmGeneration { kV0, kV1, kV1Async };

// "v0", "v1", "v1-async".
std::string_view VllmGenerationName(VllmGeneration g);

struct EngineVersion {
  int major = 0;
  int minor = 10;
  int patch = 0;
  std::string text = "0.10";  // as written

  VllmGeneration generation() const;
};

// The default when a scenario names none: vLLM 0.10, the V1 engine without async
// scheduling (its step's CPU work is not hidden, the pessimistic side for sizing).
inline constexpr std::string_view kDefaultEngineVersion = "0.10";

inline constexpr Duration kV0HostPerStep = Duration::Nanos(1'322'000);
inline constexpr Duration kV0HostPerExtraRank = Duration::Nanos(555'000);
inline constexpr Duration kV1HostPerStep = kV0HostPerStep;
// V0's block manager keeps this share of the KV blocks free when it admits a prompt
// (vLLM's `watermark`, 0.01); V1 keeps none.
inline constexpr double kV0AdmissionWatermark = 0.01;

// "MAJOR.MINOR" or "MAJOR.MINOR.PATCH" (a leading 'v' is allowed), each part 0..9999.
// Errors say what was expected (not located; the caller locates them).
Expected<EngineVersion> ParseEngineVersion(std::string_view text);

// The host overhead of `version` on `tp` ranks per replica (tp >= 1), as the table above.
HostOverhead DefaultHostOverhead(const EngineVersion& version, int64_t tp);

}  // namespace fleetplan
