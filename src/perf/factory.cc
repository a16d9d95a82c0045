#include "fleetplan/perf/factory.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/error.h"
#include "fleetplan/perf/affine.h"
#include "fleetplan/perf/kernel_table.h"
#include "fleetplan/perf/roofline.h"
#include "fleetplan/perf/table.h"

namespace fleetplan {

namespace {

using Built = Expected<std::unique_ptr<StepCostModel>>;
using Builder = Built (*)(const YamlNode& node, const StepModelContext& ctx);

Built BuildAffine(const YamlNode& node, const StepModelContext& /*ctx*/) {
  FP_ASSIGN_OR_RETURN(const AffineParams params, AffineStepModel::Parse(node));
  return std::unique_ptr<StepCostModel>(std::make_unique<AffineStepModel>(params));
}

Built BuildRoofline(const YamlNode& node, const StepModelContext& ctx) {
  FP_ASSIGN_OR_RETURN(const RooflineParams params, RooflineStepModel::Parse(node));
  auto model = RooflineStepModel::Create(RooflineInputs{ctx.memory, ctx.tp_link, ctx.pp_link, params});
  if (!model.ok()) return node.Error(model.status().message());
  return std::unique_ptr<StepCostModel>(std::move(model).value());
}

// The largest decode batch a step can cost: max_running, padded to its graph bucket.
int64_t MaxDecodeBatch(const StepModelContext& ctx) {
  return ctx.cuda_graphs.enabled() ? ctx.cuda_graphs.PaddedLimit(ctx.memory.max_running)
                                   : ctx.memory.max_running;
}

Built BuildTable(const YamlNode& node, const StepModelContext& ctx) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"kind", "file", "extrapolate"}));
  const YamlNode file = node["file"];
  FP_ASSIGN_OR_RETURN(const std::string name, file.AsString());
  FP_ASSIGN_OR_RETURN(const bool extrapolate, node["extrapolate"].BoolOr(false));
  const std::string path = ResolveScenarioPath(ctx.scenario_dir, name);
  auto text = ReadFile(path);
  if (!text.ok()) return file.Error(fmt::format("cannot read step table: {}", text.status().message()));
  FP_ASSIGN_OR_RETURN(StepTable table, StepTable::Parse(text.value(), path));
  const int64_t max_decode = MaxDecodeBatch(ctx);
  const int64_t max_prefill = ctx.memory.max_batched_tokens;
  if (extrapolate) {
    FP_RETURN_IF_ERROR(table.CheckExtrapolationSafe(max_decode, max_prefill));
  } else if (std::string gap = table.CoverageGap(max_decode, max_prefill); !gap.empty()) {
    if (max_decode != ctx.memory.max_running) {
      gap += fmt::format(" (max_running {} runs as CUDA-graph bucket {})", ctx.memory.max_running, max_decode);
    }
    return file.Error(gap);
  }
  return std::unique_ptr<StepCostModel>(std::make_unique<TableStepModel>(std::move(table), extrapolate));
}

// {kind: kernel-table, dir: profile/tp1}: the per-layer kernel tables of perf/kernel_table.h;
// layers, experts and ep come from the scenario's model and layout.
Built BuildKernelTable(const YamlNode& node, const StepModelContext& ctx) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"kind", "dir"}));
  const YamlNode dir_node = node["dir"];
  FP_ASSIGN_OR_RETURN(const std::string dir, dir_node.AsString());
  const ModelSpec& model = ctx.memory.model;
  if (model.layers < 1) return node.Error("kernel-table needs the model's layer count (model.layers >= 1)");
  auto tables = KernelTables::Load(ResolveScenarioPath(ctx.scenario_dir, dir), ctx.memory.layout.tp);
  if (!tables.ok()) return dir_node.Error(tables.status().message());
  KernelModelShape shape;
  shape.layers = model.layers;
  if (model.moe) {
    if (!tables->has_moe) return dir_node.Error(fmt::format("model '{}' is MoE but the profile has no moe.csv", model.name));
    shape.experts = model.moe->experts;
    shape.experts_per_token = model.moe->experts_per_token;
    shape.ep = std::max<int64_t>(1, ctx.memory.layout.ep);
    shape.hidden = model.hidden;
    shape.ep_link = LinkCost::Of(ctx.tp_link);  // the ep ranks sit on the intra-node link
    if (shape.ep > 1 && shape.ep_link.bandwidth <= 0) {
      return node.Error("kernel-table with ep > 1 needs the intra-node link (hardware.intra_node_link)");
    }
  }
  return std::unique_ptr<StepCostModel>(std::make_unique<KernelTableStepModel>(std::move(tables).value(), shape));
}

struct Kind {
  const char* name;
  Builder build;
};

// Sorted by name; one entry per kind.
constexpr Kind kKinds[] = {
    {"affine", &BuildAffine},
    {"kernel-table", &BuildKernelTable},
    {"roofline", &BuildRoofline},
    {"table", &BuildTable},
};

Built WrapWithGraphs(std::unique_ptr<StepCostModel> model, const YamlNode& node,
                     const StepModelContext& ctx) {
  const int64_t layers = ctx.memory.model.layers;
  if (layers < 1) return node.Error("cuda_graphs needs the model's layer count (model.layers >= 1)");
  const Duration per_layer = ctx.cuda_graphs.eager_launch_per_layer().value_or(
      DefaultEagerLaunchPerLayer(ctx.memory.layout.tp));
  return std::unique_ptr<StepCostModel>(
      std::make_unique<GraphedStepModel>(std::move(model), ctx.cuda_graphs, layers, per_layer));
}

}  // namespace

const std::vector<std::string>& StepModelKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> v;
    for (const Kind& k : kKinds) v.emplace_back(k.name);
    return v;
  }();
  return kinds;
}

std::string ResolveScenarioPath(const std::string& scenario_dir, const std::string& file) {
  const std::filesystem::path p(file);
  if (p.is_absolute() || scenario_dir.empty()) return p.lexically_normal().string();
  return (std::filesystem::path(scenario_dir) / p).lexically_normal().string();
}

Expected<std::unique_ptr<StepCostModel>> MakeStepCostModel(const YamlNode& node,
                                                           const StepModelContext& ctx) {
  if (!node.IsMap()) {
    return node.Error(fmt::format("expected a map with a `kind` ({})", fmt::join(StepModelKinds(), ", ")));
  }
  const YamlNode kind_node = node["kind"];
  FP_ASSIGN_OR_RETURN(const std::string kind, kind_node.AsString());
  const auto* it = std::find_if(std::begin(kKinds), std::end(kKinds),
                                [&](const Kind& k) { return kind == k.name; });
  if (it == std::end(kKinds)) {
    return kind_node.Error(UnknownNameMessage("step model kind", kind, StepModelKinds()));
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<StepCostModel> model, it->build(node, ctx));
  if (!ctx.cuda_graphs.enabled()) return model;
  return WrapWithGraphs(std::move(model), node, ctx);
}

}  // namespace fleetplan
