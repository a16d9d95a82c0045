#include "fleetplan/perf/factory.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "fleetplan/core/error.h"
#include "fleetplan/perf/affine.h"
#include "fleetplan/perf/aiconfigurator.h"
#include "fleetplan/perf/collective_tables.h"
#include "fleetplan/perf/kernel_table.h"
#include "fleetplan/perf/roofline.h"
#include "fleetplan/perf/table.h"
#include "perf/gzip_file.h"

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
    if (!perf_internal::IsTableFolder(default_tables)) {
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

// The key of one load of the tables: the source and every shape field a load reads.
std::string AicLoadKey(const AicSource& src, const AicModelShape& s) {
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", src.dir, src.version,
                                src.moe_distribution, s.model, s.layers, s.dense_layers, s.moe_layers, s.hidden,
                                s.heads, s.kv_heads, s.head_dim, s.experts, s.experts_per_token, s.expert_intermediate,
                                s.moe_tp, s.moe_ep, s.gemm_dtype, s.kv_dtype);
  for (const auto* gemms : {&s.layer_gemms, &s.dense_gemms, &s.moe_gemms}) {
    for (const AicGemmShape& g : *gemms) key += fmt::format("|{}:{}x{}", g.name, g.n, g.k);
  }
  key += fmt::format("|{}:{}x{}", s.lm_head.name, s.lm_head.n, s.lm_head.k);
  for (const AicAttentionGroup& g : s.attention) key += fmt::format("|attn:{}@{}", g.layers, g.window);
  return key;
}

// AicKernels::Load, remembered for the tables that ship inside the binary (immutable, so a
// load is a pure function of its key): a sweep or a plan builds the same model's step
// model many times, and each load parses megabytes. Tables on disk are read every time
// (they may change between runs of a long-lived process). Thread-safe.
Expected<AicKernels> LoadAicKernels(const AicSource& src, const AicModelShape& shape) {
  if (!perf_internal::IsBuiltinPath(src.dir)) return AicKernels::Load(src, shape);
  static std::mutex mu;
  static std::map<std::string, AicKernels> loaded;
  const std::string key = AicLoadKey(src, shape);
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (const auto it = loaded.find(key); it != loaded.end()) return it->second;
  }
  auto kernels = AicKernels::Load(src, shape);
  if (!kernels.ok()) return kernels;
  const std::lock_guard<std::mutex> lock(mu);
  return loaded.emplace(key, *kernels).first->second;
}

// {kind: aiconfigurator, dir: GPU folder[, version, moe_distribution, collectives]}: the
// measured kernels of perf/aiconfigurator.h at the shapes of one rank of the scenario's
// model and layout; collectives from `dir`/comm unless named.
Built BuildAiconfigurator(const YamlNode& node, const StepModelContext& ctx) {
  FP_RETURN_IF_ERROR(node.CheckKeys({"kind", "dir", "version", "moe_distribution", "collectives", "other_kernels"}));
  const YamlNode dir_node = node["dir"];
  AicSource source;
  if (dir_node.present() && !dir_node.IsNull()) {
    FP_ASSIGN_OR_RETURN(const std::string dir, dir_node.AsString());
    source.dir = ResolveScenarioPath(ctx.scenario_dir, dir);
  } else if (!ctx.memory.gpu.kernel_tables.empty()) {
    source.dir = ctx.memory.gpu.kernel_tables;
  } else {
    return node.Error(fmt::format(
        "no kernel tables ship for GPU '{}' (the built-in h100-sxm-80g and h200-141g have them); name the tables' "
        "folder with `dir:`",
        ctx.memory.gpu.name));
  }
  AicOtherKernels other;
  FP_ASSIGN_OR_RETURN(other.enabled, node["other_kernels"].BoolOr(true));
  FP_ASSIGN_OR_RETURN(source.version, node["version"].StringOr(kDefaultAicVersion));
  FP_ASSIGN_OR_RETURN(source.moe_distribution, node["moe_distribution"].StringOr(kDefaultAicMoeDistribution));
  auto shape = AicShapeOf(ctx.memory.model, ctx.memory.layout, ctx.memory.weight_dtype, ctx.memory.kv_dtype);
  if (!shape.ok()) return node.Error(shape.status().message());
  auto kernels = LoadAicKernels(source, *shape);
  if (!kernels.ok()) return dir_node.Error(kernels.status().message());
  const std::string comm_dir = (std::filesystem::path(source.dir) / "comm").string();
  FP_ASSIGN_OR_RETURN(std::shared_ptr<const CollectiveTables> collectives,
                      ReadCollectiveSource(node["collectives"], ctx, comm_dir));
  FP_ASSIGN_OR_RETURN(const ParallelLinks links, LinksOf(node, ctx, "aiconfigurator"));
  if (other.enabled) {
    if (ctx.memory.gpu.memory_bandwidth <= 0) {
      return node.Error(fmt::format("other_kernels needs the GPU's memory bandwidth (GPU '{}' states none); set "
                                    "other_kernels: false",
                                    ctx.memory.gpu.name));
    }
    if (kernels->shortest_gemm_ns <= 0) {
      return node.Error("other_kernels takes its launch floor from the tables' bf16 GEMM rows, and these tables have "
                        "none; set other_kernels: false");
    }
    other.floor_ns = kernels->shortest_gemm_ns;
    other.bytes_per_ns = ctx.memory.gpu.memory_bandwidth * kOtherKernelMemoryEfficiency / 1e9;
  }
  return std::unique_ptr<StepCostModel>(std::make_unique<AicStepModel>(
      std::move(kernels).value(), std::move(shape).value(), ParallelComm(links, std::move(collectives)), other));
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

DefaultStepModelChoice DefaultStepModel(const StepModelContext& ctx) {
  const GpuSpec& gpu = ctx.memory.gpu;
  if (gpu.kernel_tables.empty()) {
    return {"{kind: roofline}", fmt::format("roofline: no measured kernel tables ship for {}", gpu.name)};
  }
  auto shape = AicShapeOf(ctx.memory.model, ctx.memory.layout, ctx.memory.weight_dtype, ctx.memory.kv_dtype);
  if (!shape.ok()) {
    return {"{kind: roofline}", fmt::format("roofline: the measured kernel tables of {} do not cover this model ({})",
                                            gpu.name, shape.status().message())};
  }
  return {"{kind: aiconfigurator}",
          fmt::format("aiconfigurator on the measured kernel tables that ship for {} ({})", gpu.name, gpu.kernel_tables)};
}

Expected<std::unique_ptr<StepCostModel>> MakeDefaultStepCostModel(const StepModelContext& ctx) {
  const DefaultStepModelChoice choice = DefaultStepModel(ctx);
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(choice.yaml, "<default step model>"));
  return MakeStepCostModel(doc.root(), ctx);
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
