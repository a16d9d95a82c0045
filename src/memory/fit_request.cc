#include "fleetplan/core/flag_error.h"
#include "fleetplan/memory/fit_request.h"

#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/catalog/native_dtype.h"
#include "fleetplan/core/scenario_schema.h"
#include "fleetplan/core/yaml.h"
#include "memory/text.h"

namespace fleetplan {
namespace {

// The scenario's key lists, shared with every other reader of the format.
namespace keys = scenario_keys;

ValueOrigin OriginOf(const YamlNode& node) { return ValueOrigin{node.location(), node.path()}; }

// A section that is present and not null (`engine:` alone reads as absent).
bool Has(const YamlNode& node) { return node.present() && !node.IsNull(); }

// A map with allowed keys, or absent/null (the caller then reads nothing from it).
Status CheckSection(const YamlNode& node, const std::vector<std::string>& allowed) {
  if (!Has(node)) return Status::Ok();
  return node.CheckKeys(allowed);
}

Status ReadInt(const YamlNode& node, Sourced<int64_t>& out) {
  if (!node.present()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(int64_t v, node.AsInt());
  out.Set(v, OriginOf(node));
  return Status::Ok();
}

Status ReadDouble(const YamlNode& node, Sourced<double>& out) {
  if (!node.present()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(double v, node.AsDouble());
  out.Set(v, OriginOf(node));
  return Status::Ok();
}

Status ReadString(const YamlNode& node, Sourced<std::string>& out) {
  if (!node.present()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::string v, node.AsString());
  out.Set(std::move(v), OriginOf(node));
  return Status::Ok();
}

// A size that narrows the catalog GPU's memory (an inventory that reports less).
Status ReadGpuMemory(const YamlNode& node, Sourced<Bytes>& out) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(Bytes b, node.AsBytes());
  if (b.count() <= 0) return node.Error(fmt::format("expected a size above 0, got '{}'", node.Text()));
  out.Set(b, OriginOf(node));
  return Status::Ok();
}

Status ReadDType(const YamlNode& node, Sourced<DType>& out) {
  if (!node.present()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::string name, node.AsString());
  Expected<DType> t = ParseDType(name);
  if (!t.ok()) return node.Error(t.status().message());
  out.Set(*t, OriginOf(node));
  return Status::Ok();
}

Status ReadModel(const YamlNode& model, FitSpec& spec) {
  FP_RETURN_IF_ERROR(CheckSection(model, keys::kModel));
  if (!Has(model)) return Status::Ok();
  FP_RETURN_IF_ERROR(ReadString(model["name"], spec.model_name));
  const YamlNode inline_spec = model["spec"];
  if (inline_spec.present()) {
    const std::string name = spec.model_name.value.value_or("inline");
    FP_ASSIGN_OR_RETURN(ModelSpec m, Catalog::ParseModelSpec(inline_spec, name));
    spec.model_spec.Set(std::move(m), OriginOf(inline_spec));
  }
  FP_RETURN_IF_ERROR(ReadDType(model["weight_dtype"], spec.weight_dtype));
  FP_RETURN_IF_ERROR(ReadDType(model["kv_dtype"], spec.kv_dtype));
  const YamlNode window = model["kv_window"];
  if (window.present() && window.IsNull()) {
    spec.kv_window.Set(std::nullopt, OriginOf(window));
  } else if (window.present()) {
    FP_ASSIGN_OR_RETURN(int64_t w, window.AsInt());
    spec.kv_window.Set(w, OriginOf(window));
  }
  return ReadInt(model["max_context"], spec.context);
}

Status ReadLayout(const YamlNode& node, FitSpec& spec) {
  FP_RETURN_IF_ERROR(ReadInt(node["tp"], spec.tp));
  FP_RETURN_IF_ERROR(ReadInt(node["pp"], spec.pp));
  FP_RETURN_IF_ERROR(ReadInt(node["ep"], spec.ep));
  return ReadDouble(node["gpu_memory_utilization"], spec.gpu_memory_utilization);
}

// deployment.pools: the entry whose role is `role` (or the only one when role is empty).
Expected<YamlNode> SelectPool(const YamlNode& pools, const std::string& role,
                              const ValueOrigin& role_origin) {
  FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, pools.Items());
  std::vector<std::string> roles;
  for (const YamlNode& item : items) {
    FP_RETURN_IF_ERROR(item.CheckKeys(keys::kPool));
    FP_ASSIGN_OR_RETURN(std::string r, item["role"].AsString());
    roles.push_back(r);
  }
  if (role.empty() && items.size() == 1) return items[0];
  if (role.empty()) {
    return pools.Error(fmt::format("the scenario has {} pools ({}); choose one with --pool ROLE",
                                   items.size(), fmt::join(roles, ", ")));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (roles[i] == role) return items[i];
  }
  return ErrorAt(role_origin, UnknownNameMessage("pool role", role, roles));
}

Status ReadDeployment(const YamlNode& deployment, const std::string& pool_role,
                      const ValueOrigin& pool_origin, FitSpec& spec) {
  FP_RETURN_IF_ERROR(CheckSection(deployment, keys::kDeployment));
  if (!Has(deployment) || !Has(deployment["pools"])) {
    if (!pool_role.empty()) {
      return ErrorAt(pool_origin, "the scenario has no deployment.pools to choose from");
    }
    return Has(deployment) ? ReadLayout(deployment, spec) : Status::Ok();
  }
  const YamlNode pools = deployment["pools"];
  FP_RETURN_IF_ERROR(ReadLayout(deployment, spec));
  FP_ASSIGN_OR_RETURN(YamlNode pool, SelectPool(pools, pool_role, pool_origin));
  return ReadLayout(pool, spec);
}

Status ReadEngine(const YamlNode& engine, FitSpec& spec) {
  FP_RETURN_IF_ERROR(CheckSection(engine, keys::kEngine));
  if (!Has(engine)) return Status::Ok();
  const YamlNode scheduler = engine["scheduler"];
  FP_RETURN_IF_ERROR(CheckSection(scheduler, keys::kScheduler));
  if (Has(scheduler)) {
    FP_RETURN_IF_ERROR(ReadInt(scheduler["max_running"], spec.concurrency));
    FP_RETURN_IF_ERROR(ReadInt(scheduler["max_batched_tokens"], spec.max_batched_tokens));
  }
  const YamlNode kv = engine["kv"];
  FP_RETURN_IF_ERROR(CheckSection(kv, keys::kKv));
  if (Has(kv)) FP_RETURN_IF_ERROR(ReadInt(kv["block_tokens"], spec.block_tokens));
  return Status::Ok();
}

Status ReadVersion(const YamlNode& version) {
  if (!version.present()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(int64_t v, version.AsInt());
  if (v != keys::kVersion) {
    return version.Error(fmt::format("unsupported scenario version {}; expected {}", v,
                                     keys::kVersion));
  }
  return Status::Ok();
}

// ---- resolution ---------------------------------------------------------------------

template <typename T>
T ValueOr(const Sourced<T>& s, T fallback, std::vector<std::string>& defaulted,
          std::string_view name, std::string_view shown) {
  if (s.value) return *s.value;
  defaulted.push_back(fmt::format("{} {}", name, shown));
  return fallback;
}

Expected<ModelSpec> ResolveModel(const FitSpec& spec, const Catalog& catalog) {
  if (spec.model_spec.value) {
    // A name beside an inline spec labels it; a catalog model's name would run the inline
    // shape under that model's name, so it must be one or the other.
    if (spec.model_name.value && catalog.Model(*spec.model_name.value).ok()) {
      return ErrorAt(spec.model_name.origin,
                     fmt::format("'{}' is a catalog model, and {} defines an inline model beside it; use one: "
                                 "drop {} to run the catalog model, or give the inline model a name of its "
                                 "own",
                                 *spec.model_name.value, spec.model_spec.origin.path, spec.model_spec.origin.path));
    }
    return *spec.model_spec.value;
  }
  if (!spec.model_name.value) {
    return UsageError("missing model: pass --model NAME (`fleetplan catalog models` lists them) "
                      "or --scenario FILE with model.name");
  }
  Expected<ModelSpec> m = catalog.Model(*spec.model_name.value);
  if (!m.ok()) return ErrorAt(spec.model_name.origin, m.status().message());
  return m;
}

Expected<GpuSpec> ResolveGpu(const FitSpec& spec, const Catalog& catalog,
                             std::vector<std::string>& derived) {
  if (!spec.gpu_name.value) {
    return UsageError("missing GPU: pass --gpu NAME (`fleetplan catalog gpus` lists them) or "
                      "--scenario FILE with hardware.gpu");
  }
  Expected<GpuSpec> gpu = catalog.Gpu(*spec.gpu_name.value);
  if (!gpu.ok()) return ErrorAt(spec.gpu_name.origin, gpu.status().message());
  if (spec.gpu_memory.value) {
    derived.push_back(fmt::format("gpu memory {} from {} (catalog: {})",
                                  memory_text::GibExact(*spec.gpu_memory.value),
                                  spec.gpu_memory.origin.path, memory_text::Gib(gpu->memory)));
    gpu->memory = *spec.gpu_memory.value;
  }
  return gpu;
}


MemoryInputs ResolveKnobs(const FitSpec& spec, const ModelSpec& model,
                          std::vector<std::string>& defaulted) {
  MemoryInputs in;
  in.layout.tp = ValueOr<int64_t>(spec.tp, 1, defaulted, "tp", "1");
  in.layout.pp = ValueOr<int64_t>(spec.pp, 1, defaulted, "pp", "1");
  in.layout.ep = ValueOr<int64_t>(spec.ep, 1, defaulted, "ep", "1");
  const DType kv = DefaultKvDType(model);
  in.weight_dtype = ValueOr(spec.weight_dtype, model.native_dtype, defaulted, "weight_dtype",
                            fmt::format("{} (the checkpoint's)", DTypeName(model.native_dtype)));
  in.kv_dtype = ValueOr(spec.kv_dtype, kv, defaulted, "kv_dtype", std::string(DTypeName(kv)));
  in.kv_window = ValueOr<std::optional<int64_t>>(spec.kv_window, std::nullopt, defaulted,
                                                 "kv_window", "none (full context)");
  in.gpu_memory_utilization =
      ValueOr(spec.gpu_memory_utilization, kDefaultGpuMemoryUtilization, defaulted,
              "gpu_memory_utilization", fmt::format("{}", kDefaultGpuMemoryUtilization));
  in.block_tokens = ValueOr(spec.block_tokens, kDefaultBlockTokens, defaulted, "block_tokens",
                            fmt::format("{}", kDefaultBlockTokens));
  in.max_batched_tokens =
      ValueOr(spec.max_batched_tokens, kDefaultMaxBatchedTokens, defaulted, "max_batched_tokens",
              fmt::format("{}", kDefaultMaxBatchedTokens));
  return in;
}

// The origin of the value behind `field` (the model spec, when inline, for kModel).
ValueOrigin OriginFor(const FitSpec& spec, MemoryField field) {
  switch (field) {
    case MemoryField::kModel:
      return spec.model_spec.value ? spec.model_spec.origin : spec.model_name.origin;
    case MemoryField::kGpu: return spec.gpu_memory.value ? spec.gpu_memory.origin : spec.gpu_name.origin;
    case MemoryField::kTp: return spec.tp.origin;
    case MemoryField::kPp: return spec.pp.origin;
    case MemoryField::kEp: return spec.ep.origin;
    case MemoryField::kWeightDType: return spec.weight_dtype.origin;
    case MemoryField::kKvDType: return spec.kv_dtype.origin;
    case MemoryField::kKvWindow: return spec.kv_window.origin;
    case MemoryField::kGpuMemoryUtilization: return spec.gpu_memory_utilization.origin;
    case MemoryField::kBlockTokens: return spec.block_tokens.origin;
    case MemoryField::kMaxBatchedTokens: return spec.max_batched_tokens.origin;
    case MemoryField::kMaxRunning:
    case MemoryField::kConcurrency: return spec.concurrency.origin;
    case MemoryField::kContext: return spec.context.origin;
  }
  return {};
}

}  // namespace

DType DefaultKvDType(const ModelSpec& m) {
  return BitsPerElement(m.native_dtype) >= 16 ? m.native_dtype : DType::kBf16;
}

ValueOrigin ValueOrigin::Flag(std::string flag) { return ValueOrigin{SourceLocation{}, std::move(flag)}; }

Status ErrorAt(const ValueOrigin& origin, std::string_view message) {
  // A value from the command line is a usage error (core/flag_error.h); one from a file is
  // located there.
  if (origin.where.file.empty() && origin.path.starts_with("--")) return FlagValueError(origin.path, message);
  return LocatedError(origin.where, origin.path, message);
}

Expected<FitSpec> ReadFitScenario(const std::string& path, const std::string& pool_role,
                                  const ValueOrigin& pool_origin) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadFitScenario(doc, pool_role, pool_origin);
}

Expected<FitSpec> ReadFitScenario(const YamlDocument& doc, const std::string& pool_role,
                                  const ValueOrigin& pool_origin) {
  const YamlNode root = doc.root();
  // An empty file (or one of comments) is named as such, not as a missing model.
  if (root.IsNull()) FP_RETURN_IF_ERROR(root["model"].RequirePresent());
  FP_RETURN_IF_ERROR(root.CheckKeys(keys::kRoot));
  FP_RETURN_IF_ERROR(ReadVersion(root["version"]));
  FitSpec spec;
  FP_RETURN_IF_ERROR(ReadModel(root["model"], spec));
  const YamlNode hardware = root["hardware"];
  FP_RETURN_IF_ERROR(CheckSection(hardware, keys::kHardware));
  if (Has(hardware)) {
    FP_RETURN_IF_ERROR(ReadString(hardware["gpu"], spec.gpu_name));
    FP_RETURN_IF_ERROR(ReadGpuMemory(hardware["gpu_memory"], spec.gpu_memory));
  }
  FP_RETURN_IF_ERROR(ReadDeployment(root["deployment"], pool_role, pool_origin, spec));
  FP_RETURN_IF_ERROR(ReadEngine(root["engine"], spec));
  spec.from_scenario = true;
  return spec;
}

Expected<ResolvedFit> ResolveFitSpec(const FitSpec& spec, const Catalog& catalog) {
  ResolvedFit out;
  FP_ASSIGN_OR_RETURN(ModelSpec model, ResolveModel(spec, catalog));
  FP_ASSIGN_OR_RETURN(GpuSpec gpu, ResolveGpu(spec, catalog, out.derived));
  std::vector<std::string> defaulted;
  FitRequest& req = out.request;
  req.memory = ResolveKnobs(spec, model, defaulted);
  if (spec.context.value) {
    req.context = *spec.context.value;
  } else if (model.max_context > 0) {
    req.context = model.max_context;
    out.derived.push_back(fmt::format("context {}: the max_context of '{}' (not given)",
                                      model.max_context, model.name));
  } else {
    return UsageError(fmt::format("missing context: model '{}' states no max_context; pass "
                                  "--context TOKENS",
                                  model.name));
  }
  req.concurrency = spec.from_scenario
                        ? ValueOr<int64_t>(spec.concurrency, kDefaultMaxRunning, defaulted,
                                           "engine.scheduler.max_running", fmt::format("{}", kDefaultMaxRunning))
                        : ValueOr<int64_t>(spec.concurrency, 1, defaulted, "concurrency", "1");
  req.memory.max_running = req.concurrency;
  req.memory.model = std::move(model);
  req.memory.gpu = std::move(gpu);
  if (!defaulted.empty()) {
    out.derived.push_back(fmt::format("defaults (not given): {}", fmt::join(defaulted, ", ")));
  }
  if (std::optional<FieldError> e = ValidateFitRequest(req)) {
    ValueOrigin origin = OriginFor(spec, e->field);
    if (origin.path.empty()) origin.path = std::string(MemoryFieldName(e->field));
    return ErrorAt(origin, e->message);
  }
  return out;
}

Status CheckNativeFormats(const FitSpec& spec, const FitRequest& request) {
  const std::tuple<MemoryField, DType, const char*> formats[] = {
      {MemoryField::kWeightDType, request.memory.weight_dtype, "weights"},
      {MemoryField::kKvDType, request.memory.kv_dtype, "KV cache"}};
  for (const auto& [field, dtype, what] : formats) {
    std::string gap = NativeDTypeGap(request.memory.gpu, request.memory.gpu.name, dtype, what);
    if (gap.empty()) continue;
    ValueOrigin origin = OriginFor(spec, field);
    if (origin.path.empty()) {
      origin.path = std::string(MemoryFieldName(field));
      gap += field == MemoryField::kWeightDType ? "; it is the checkpoint's format: choose another one"
                                                : "; choose another KV format";
    }
    return ErrorAt(origin, gap);
  }
  return Status::Ok();
}

}  // namespace fleetplan
