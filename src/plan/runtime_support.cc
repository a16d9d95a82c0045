#include "fleetplan/plan/runtime_support.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <utility>

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

// vLLM: expert parallelism is a switch (--enable-expert-parallel) that makes the MoE layers'
// expert-parallel size equal to tp × dp; inside one replica that is ep = tp.
class VllmSupport final : public RuntimeSupport {
 public:
  std::string name() const override { return "vllm"; }
  std::optional<std::string> Refuse(const ModelSpec& /*model*/, const Parallelism& p) const override {
    if (p.ep == 1 || p.ep == p.tp) return std::nullopt;
    return fmt::format(
        "vllm runs expert parallelism over the whole tp group (--enable-expert-parallel: "
        "ep = tp = {}); ep {} inside it is not offered",
        p.tp, p.ep);
  }
};

// SGLang (moe_tp_size = tp_size / ep_size) and TensorRT-LLM (moe_tp_size × moe_ep_size =
// tp_size) run any ep dividing tp, which the memory module already requires.
class DividingEpSupport final : public RuntimeSupport {
 public:
  explicit DividingEpSupport(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::optional<std::string> Refuse(const ModelSpec& /*model*/, const Parallelism& /*p*/) const override {
    return std::nullopt;
  }

 private:
  std::string name_;
};

using Builder = std::function<std::unique_ptr<RuntimeSupport>()>;

const std::map<std::string, Builder>& Builders() {
  static const std::map<std::string, Builder> builders = {
      {"sglang", [] { return std::make_unique<DividingEpSupport>("sglang"); }},
      {"trtllm", [] { return std::make_unique<DividingEpSupport>("trtllm"); }},
      {"vllm", [] { return std::make_unique<VllmSupport>(); }},
  };
  return builders;
}

}  // namespace

const std::vector<std::string>& RuntimeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, builder] : Builders()) out.push_back(name);
    return out;
  }();
  return names;
}

Expected<std::unique_ptr<RuntimeSupport>> MakeRuntimeSupport(std::string_view name) {
  const auto it = Builders().find(std::string(name));
  if (it == Builders().end()) return InvalidInput(UnknownNameMessage("runtime", name, RuntimeNames()));
  return it->second();
}

}  // namespace fleetplan
