// Quantization support: which quantization method runs natively on which GPU generation,
// at which tensor-parallel sizes and from which runtime version — and what it silently
// falls back to where it does not (e.g. FP8 W8A8 on Ampere runs weight-only FP8 through
// the Marlin kernels: the memory saving stays, the FP8 matmul speed does not).
//
// One row per (method, generation, runtime): `min_version` is the first runtime version
// with the path, `max_tp` the largest tensor-parallel size it was validated at (0: any),
// `support` native | fallback | unsupported, `falls_back_to` the path that really runs
// when support is fallback. The rows follow vLLM's "supported hardware" matrix for
// quantization kernels (docs.vllm.ai, features/quantization/supported_hardware) with the
// fallback spelled out where vLLM's table shows a check mark for a weight-only path.
// A (method, generation, runtime) with no row is unknown: the gate holds on it, it never
// assumes support.
// Thread model: immutable static data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fleetplan {

struct QuantSupportRow {
  const char* method;         // "bf16", "fp8" (W8A8), "w4a16" (GPTQ/AWQ), "w8a8-int8"
  const char* generation;     // "volta", "turing", "ampere", "ada", "hopper"
  const char* runtime;        // "vllm"
  const char* min_version;    // "0.5.0"
  int64_t max_tp;             // 0 = any
  const char* support;        // "native", "fallback", "unsupported"
  const char* falls_back_to;  // "" unless support == "fallback"
  const char* note;
};

const std::vector<QuantSupportRow>& QuantSupportTable();
// The generation of a catalog GPU name ("a100-80g" -> "ampere"); nullopt when unknown.
std::optional<std::string> GpuGeneration(std::string_view gpu_name);
// The row for (method, generation, runtime); nullptr when there is none.
const QuantSupportRow* FindQuantSupport(std::string_view method, std::string_view generation,
                                        std::string_view runtime);
// Dotted numeric versions compared field by field ("0.10.1" > "0.9.2"); a non-numeric
// field compares as text.
int CompareVersions(std::string_view a, std::string_view b);

}  // namespace fleetplan
