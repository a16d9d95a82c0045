#include "gates/fit_section.h"

#include <string>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/memory/fit_request.h"

namespace fleetplan::gates_detail {
namespace {

ValueOrigin OriginOf(const YamlNode& n) { return ValueOrigin{n.location(), n.path()}; }

Status ReadInt(const YamlNode& n, Sourced<int64_t>& out) {
  if (!n.present() || n.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(int64_t v, n.AsInt());
  out.Set(v, OriginOf(n));
  return Status::Ok();
}

Status ReadString(const YamlNode& n, Sourced<std::string>& out) {
  if (!n.present() || n.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::string v, n.AsString());
  out.Set(v, OriginOf(n));
  return Status::Ok();
}

Status ReadDType(const YamlNode& n, Sourced<DType>& out) {
  if (!n.present() || n.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::string text, n.AsString());
  Expected<DType> t = ParseDType(text);
  if (!t.ok()) return n.Error(t.status().message());
  out.Set(*t, OriginOf(n));
  return Status::Ok();
}

}  // namespace

Expected<FitResult> CheckFitSection(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.RequirePresent());
  FP_RETURN_IF_ERROR(node.CheckKeys({"model", "gpu", "tp", "pp", "weight_dtype", "kv_dtype",
                                     "context", "concurrency", "gpu_memory_utilization",
                                     "block_tokens"}));
  if (!node.IsMap()) return node.Error("expected a mapping of fit inputs (model, gpu, tp, ...)");
  FitSpec spec;
  FP_RETURN_IF_ERROR(node["model"].RequirePresent());
  FP_RETURN_IF_ERROR(node["gpu"].RequirePresent());
  FP_RETURN_IF_ERROR(ReadString(node["model"], spec.model_name));
  FP_RETURN_IF_ERROR(ReadString(node["gpu"], spec.gpu_name));
  FP_RETURN_IF_ERROR(ReadInt(node["tp"], spec.tp));
  FP_RETURN_IF_ERROR(ReadInt(node["pp"], spec.pp));
  FP_RETURN_IF_ERROR(ReadInt(node["context"], spec.context));
  FP_RETURN_IF_ERROR(ReadInt(node["concurrency"], spec.concurrency));
  FP_RETURN_IF_ERROR(ReadInt(node["block_tokens"], spec.block_tokens));
  FP_RETURN_IF_ERROR(ReadDType(node["weight_dtype"], spec.weight_dtype));
  FP_RETURN_IF_ERROR(ReadDType(node["kv_dtype"], spec.kv_dtype));
  const YamlNode util = node["gpu_memory_utilization"];
  if (util.present() && !util.IsNull()) {
    FP_ASSIGN_OR_RETURN(double u, util.AsDouble());
    spec.gpu_memory_utilization.Set(u, OriginOf(util));
  }
  FP_ASSIGN_OR_RETURN(ResolvedFit resolved, ResolveFitSpec(spec, Catalog::Builtin()));
  return CheckFit(resolved.request);
}

}  // namespace fleetplan::gates_detail
