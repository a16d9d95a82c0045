#include "fleetplan/perf/factory.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "fleetplan/core/error.h"
#include "fleetplan/perf/affine.h"
#include "fleetplan/perf/aiconfigurator.h"
#include "fleetplan/perf/collective_tables.h"
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

Expected<std::shared_ptr<const CollectiveTables>> LoadCollectiveTables(const YamlNode& where,
                                                                       const std::vector<std::string>& paths) {
  auto loaded = CollectiveTables::Load(paths);
  if (!loaded.ok()) return where.Error(loaded.status().message());
  return std::shared_ptr<const CollectiveTables>(std::make_shared<CollectiveTables>(std::move(loaded).value()));
}

// `collectives:` of a measured step model: `alpha-beta` (null tables), or
// `{tables: PATH | [PATH, ...]}`, files or folders of measured collective tables
// (perf/collective_tables.h), each resolved against the scenario's folder. Absent:
// the folder `default_tables` (already resolved) when given, else alpha-beta.
Expected<std::shared_ptr<const CollectiveTables>> ReadCollectiveSource(const YamlNode& node,
                                                                       const StepModelContext& ctx,
                                                                       const std::string& default_tables = "") {
  if (!node.present() || node.IsNull()) {
    if (default_tables.empty()) return std::shared_ptr<const CollectiveTables>();
    if (std::error_code ec; !std::filesystem::is_directory(default_tables, ec)) {
      return node.Error(
          fmt::format("no collective tables at '{}' (read when `collectives` is absent); set "
                      "collectives: {} or {{tables: [PATH, ...]}}",
                      default_tables, kAlphaBetaCollectives));
    }
    return LoadCollectiveTables(node, {default_tables});
  }
  if (node.IsScalar()) {
    FP_ASSIGN_OR_RETURN(const std::string name, node.AsString());
    if (name == kAlphaBetaCollectives) return std::shared_ptr<const CollectiveTables>();
    return node.Error(fmt::format("expected '{}' or {{tables: [PATH, ...]}}, got '{}'", kAlphaBetaCollectives, name));
  }
  if (!node.IsMap()) return node.Error(fmt::format("expected '{}' or {{tables: [PATH, ...]}}", kAlphaBetaCollectives));
  FP_RETURN_IF_ERROR(node.CheckKeys({"tables"}));
  const YamlNode tables = node["tables"];
  std::vector<std::string> names;
  if (tables.IsScalar()) {
    FP_ASSIGN_OR_RETURN(std::string one, tables.AsString());
    names.push_back(std::move(one));
  } else {
    FP_ASSIGN_OR_RETURN(names, tables.AsStringList());
  }
  if (names.empty()) return tables.Error("expected at least one collective table file or folder");
  std::vector<std::string> paths;
  for (const std::string& n : names) paths.push_back(ResolveScenarioPath(ctx.scenario_dir, n));
  return LoadCollectiveTables(tables, paths);
}

// Links kinds whose ranks are fully connected GPU to GPU (vLLM's is_fully_connected).
bool FullyConnected(const LinkSpec& link) { return link.kind == LinkKind::kNvlink || link.kind == LinkKind::kXgmi; }

bool BetweenNodes(const LinkSpec& link) {
  return link.kind == LinkKind::kInfiniband || link.kind == LinkKind::kRoce || link.kind == LinkKind::kEthernet;
}

// The tp and pp groups of the scenario's layout and the links between them; a located
// error when a group of more than one rank has no link, or the model no hidden size.
Expected<ParallelLinks> LinksOf(const YamlNode& node, const StepModelContext& ctx, std::string_view kind) {
  ParallelLinks links;
  links.tp = std::max<int64_t>(1, ctx.memory.layout.tp);
  links.pp = std::max<int64_t>(1, ctx.memory.layout.pp);
  links.tp_link = LinkCost::Of(ctx.tp_link);
  links.pp_link = LinkCost::Of(ctx.pp_link);
  links.tp_nvlink = FullyConnected(ctx.tp_link);
  links.pp_spans_nodes = BetweenNodes(ctx.pp_link);
  links.peer_to_peer = ctx.memory.gpu.peer_to_peer;
  if (links.tp > 1 && links.tp_link.bandwidth <= 0) {
    return node.Error(fmt::format("{} with tp > 1 needs the intra-node link (hardware.intra_node_link)", kind));
  }
  if (links.pp > 1 && links.pp_link.bandwidth <= 0) {
    return node.Error(fmt::format("{} with pp > 1 needs the link between stages", kind));
  }
  if ((links.tp > 1 || links.pp > 1) && ctx.memory.model.hidden < 1) {
    return node.Error(fmt::format("{} with tp or pp > 1 needs the model's hidden size", kind));
  }
  return links;
}

// {kind: kernel-table, dir: profile/tp1[, collectives: ...]}: the per-layer kernel tables
// of perf/kernel_table.h; layers, experts, tp, pp and ep come from the scenario's model and
// layout, the links and peer-to-peer access from its hardware.
Built BuildKernelTable(const YamlNode& node, const StepModelContext& ctx) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"kind", "dir", "collectives"}));
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
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const CollectiveTables> collectives,
                      ReadCollectiveSource(node["collectives"], ctx));
  FP_ASSIGN_OR_RETURN(const ParallelLinks links, LinksOf(node, ctx, "kernel-table"));
  if (links.tp > 1 || links.pp > 1) shape.hidden = model.hidden;
  shape.comm = ParallelComm(links, std::move(collectives));
  return std::unique_ptr<StepCostModel>(std::make_unique<KernelTableStepModel>(std::move(tables).value(), shape));
}

// {kind: aiconfigurator, dir: GPU folder[, version, moe_distribution, collectives]}: the
// measured kernels of perf/aiconfigurator.h at the shapes of one rank of the scenario's
// model and layout; collectives from `dir`/comm unless named.
Built BuildAiconfigurator(const YamlNode& node, const StepModelContext& ctx) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"kind", "dir", "version", "moe_distribution", "collectives"}));
  const YamlNode dir_node = node["dir"];
  FP_ASSIGN_OR_RETURN(const std::string dir, dir_node.AsString());
  AicSource source;
  source.dir = ResolveScenarioPath(ctx.scenario_dir, dir);
  FP_ASSIGN_OR_RETURN(source.version, node["version"].StringOr(kDefaultAicVersion));
  FP_ASSIGN_OR_RETURN(source.moe_distribution, node["moe_distribution"].StringOr(kDefaultAicMoeDistribution));
  auto shape = AicShapeOf(ctx.memory.model, ctx.memory.layout, ctx.memory.weight_dtype, ctx.memory.kv_dtype);
  if (!shape.ok()) return node.Error(shape.status().message());
  auto kernels = AicKernels::Load(source, *shape);
  if (!kernels.ok()) return dir_node.Error(kernels.status().message());
  const std::string comm_dir = (std::filesystem::path(source.dir) / "comm").string();
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const CollectiveTables> collectives,
                      ReadCollectiveSource(node["collectives"], ctx, comm_dir));
  FP_ASSIGN_OR_RETURN(const ParallelLinks links, LinksOf(node, ctx, "aiconfigurator"));
  return std::unique_ptr<StepCostModel>(std::make_unique<AicStepModel>(
      std::move(kernels).value(), std::move(shape).value(), ParallelComm(links, std::move(collectives))));
}

struct Kind {
  const char* name;
  Builder build;
};

// Sorted by name; one entry per kind.
constexpr Kind kKinds[] = {
    {"affine", &BuildAffine},
    {"aiconfigurator", &BuildAiconfigurator},
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
