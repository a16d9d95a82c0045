// Which parallel compositions a serving runtime offers, as a small strategy object per
// runtime, built by one factory.
//
// Every runtime runs what the memory module accepts (memory/inputs.h: tp divides the heads,
// pp <= layers, ep divides tp and the expert count); a runtime adds only what it does not
// offer:
//   vllm    expert parallelism is all-or-nothing inside a replica: --enable-expert-parallel
//           makes ep = tp (× dp), so 1 < ep < tp is refused;
//   sglang  ep divides tp (moe_tp_size = tp_size / ep_size);
//   trtllm  ep divides tp (moe_tp_size × moe_ep_size = tp_size).
// Thread model: implementations are immutable and safe to share.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/model.h"
#include "fleetplan/core/status.h"
#include "fleetplan/memory/inputs.h"

namespace fleetplan {

class RuntimeSupport {
 public:
  virtual ~RuntimeSupport() = default;
  virtual std::string name() const = 0;
  // Why the runtime cannot run `layout` of `model`, or nullopt when it can.
  // REQUIRES: the layout passed ValidateMemoryInputs.
  virtual std::optional<std::string> Refuse(const ModelSpec& model, const Parallelism& layout) const = 0;
};

inline constexpr std::string_view kDefaultRuntime = "vllm";

// Sorted.
const std::vector<std::string>& RuntimeNames();
// Unknown names: InvalidInput "unknown runtime 'vlm'; did you mean 'vllm'? (valid: ...)".
Expected<std::unique_ptr<RuntimeSupport>> MakeRuntimeSupport(std::string_view name);

}  // namespace fleetplan
