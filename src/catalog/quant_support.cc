#include "fleetplan/catalog/quant_support.h"

#include <charconv>
#include <system_error>

namespace fleetplan {

const std::vector<QuantSupportRow>& QuantSupportTable() {
  // Read from vLLM's quantization "Supported Hardware" table (docs v0.6.4 through v0.11,
  // unchanged for these rows) and its FP8 W8A8 page ("FP8 models will run on compute
  // capability >= 7.5 (Turing) as weight-only W8A16, utilizing FP8 Marlin"). min_version is
  // the documentation version the row was checked against, not the first release with it.
  static const std::vector<QuantSupportRow> rows = {
      {"bf16", "ampere", "vllm", "0.6.4", 0, "native", "", "BF16 tensor cores"},
      {"bf16", "ada", "vllm", "0.6.4", 0, "native", "", "BF16 tensor cores"},
      {"bf16", "hopper", "vllm", "0.6.4", 0, "native", "", "BF16 tensor cores"},
      {"fp8", "hopper", "vllm", "0.6.4", 0, "native", "", "FP8 (W8A8): compute capability 9.0"},
      {"fp8", "ada", "vllm", "0.6.4", 0, "native", "", "FP8 (W8A8): compute capability 8.9"},
      {"fp8", "ampere", "vllm", "0.6.4", 0, "fallback", "weight-only fp8 (W8A16, FP8 Marlin)",
       "no FP8 tensor cores: weights stay 8-bit, matmuls run in 16-bit"},
      {"fp8", "turing", "vllm", "0.6.4", 0, "fallback", "weight-only fp8 (W8A16, FP8 Marlin)",
       "no FP8 tensor cores"},
      {"fp8", "volta", "vllm", "0.6.4", 0, "unsupported", "", ""},
      {"w4a16", "hopper", "vllm", "0.6.4", 0, "native", "", "GPTQ/AWQ through Marlin"},
      {"w4a16", "ada", "vllm", "0.6.4", 0, "native", "", "GPTQ/AWQ through Marlin"},
      {"w4a16", "ampere", "vllm", "0.6.4", 0, "native", "", "GPTQ/AWQ through Marlin"},
      {"w4a16", "turing", "vllm", "0.6.4", 0, "fallback", "GPTQ/AWQ kernels without Marlin",
       "Marlin needs Ampere or newer"},
      {"w4a16", "volta", "vllm", "0.6.4", 0, "fallback", "GPTQ kernels without Marlin (AWQ unsupported)",
       "Marlin needs Ampere or newer"},
      {"w8a8-int8", "hopper", "vllm", "0.6.4", 0, "native", "", "INT8 (W8A8)"},
      {"w8a8-int8", "ada", "vllm", "0.6.4", 0, "native", "", "INT8 (W8A8)"},
      {"w8a8-int8", "ampere", "vllm", "0.6.4", 0, "native", "", "INT8 (W8A8)"},
      {"w8a8-int8", "turing", "vllm", "0.6.4", 0, "native", "", "INT8 (W8A8)"},
      {"w8a8-int8", "volta", "vllm", "0.6.4", 0, "unsupported", "", ""},
  };
  return rows;
}

std::optional<std::string> GpuGeneration(std::string_view gpu) {
  struct Prefix {
    const char* prefix;
    const char* generation;
  };
  static const Prefix prefixes[] = {{"v100", "volta"}, {"t4", "turing"},   {"a100", "ampere"}, {"a10", "ampere"},
                                    {"l4", "ada"},     {"l40", "ada"},     {"h100", "hopper"}, {"h200", "hopper"},
                                    {"h20", "hopper"}, {"b200", "blackwell"}, {"gb200", "blackwell"}};
  const Prefix* best = nullptr;
  for (const Prefix& p : prefixes) {
    const std::string_view pre = p.prefix;
    const bool match = gpu.substr(0, pre.size()) == pre &&
                       (gpu.size() == pre.size() || gpu[pre.size()] == '-');
    if (match && (best == nullptr || pre.size() > std::string_view(best->prefix).size())) best = &p;
  }
  if (best == nullptr) return std::nullopt;
  return std::string(best->generation);
}

const QuantSupportRow* FindQuantSupport(std::string_view method, std::string_view generation,
                                        std::string_view runtime) {
  for (const QuantSupportRow& r : QuantSupportTable()) {
    if (r.method == method && r.generation == generation && r.runtime == runtime) return &r;
  }
  return nullptr;
}

int CompareVersions(std::string_view a, std::string_view b) {
  while (!a.empty() || !b.empty()) {
    const size_t da = a.find('.'), db = b.find('.');
    const std::string_view fa = a.substr(0, da), fb = b.substr(0, db);
    int64_t na = 0, nb = 0;
    const bool ia = !fa.empty() && std::from_chars(fa.data(), fa.data() + fa.size(), na).ptr == fa.data() + fa.size();
    const bool ib = !fb.empty() && std::from_chars(fb.data(), fb.data() + fb.size(), nb).ptr == fb.data() + fb.size();
    if (ia && ib) {
      if (na != nb) return na < nb ? -1 : 1;
    } else if (fa != fb) {
      return fa < fb ? -1 : 1;
    }
    a = da == std::string_view::npos ? std::string_view() : a.substr(da + 1);
    b = db == std::string_view::npos ? std::string_view() : b.substr(db + 1);
  }
  return 0;
}

}  // namespace fleetplan
