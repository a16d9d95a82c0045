// GPU and link entries of user catalog files.
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "catalog/readers.h"
#include "fleetplan/core/error.h"

namespace fleetplan::catalog_internal {
namespace {

const std::vector<std::string> kGpuKeys = {
    "description", "source",    "memory",     "memory_bandwidth", "bf16_tflops",
    "fp8_tflops",  "int8_tops", "fp4_tflops", "dtypes",           "default_intra_link",
    "peer_to_peer"};
const std::vector<std::string> kLinkKeys = {"description", "source", "kind", "bandwidth",
                                            "latency"};

// Bounds that catch unit mistakes (FLOP/s given where TFLOPS are expected, bits for bytes):
// each is ~100x beyond any part listed in the built-in catalog.
constexpr double kMaxTflops = 1e6;
constexpr double kMaxBandwidth = 1e15;            // bytes/s
constexpr int64_t kMaxMemory = int64_t{1} << 44;  // 16 TiB

constexpr double kTera = 1e12;

// A TFLOPS (or TOPS) figure; `required` ones must be > 0, the others may be 0 (= none).
Expected<double> ReadTflops(const YamlNode& node, bool required) {
  double value = 0;
  if (required) {
    FP_ASSIGN_OR_RETURN(value, node.AsDouble());
  } else {
    FP_ASSIGN_OR_RETURN(value, node.DoubleOr(0));
  }
  const double min = required ? 0 : -1;  // exclusive lower bound
  if (value <= min || value > kMaxTflops) {
    return node.Error(
        fmt::format("expected a number in {}0, {:.0f}] (TFLOPS, e.g. 989.5 for an "
                    "H100 SXM), got {}",
                    required ? "(" : "[", kMaxTflops, node.Text()));
  }
  return value * kTera;
}

Expected<double> ReadBandwidth(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(const std::string text, node.AsString());
  Expected<double> parsed = ParseBandwidth(text);
  if (!parsed.ok()) return node.Error(parsed.status().message());
  if (*parsed <= 0 || *parsed > kMaxBandwidth) {
    return node.Error(
        fmt::format("expected a bandwidth above 0 and at most 1PB/s, got '{}'", text));
  }
  return *parsed;
}

// Listed formats, or when absent: bf16, fp16, fp32, int4 (weight-only) plus each format
// given a nonzero rate.
Expected<std::vector<DType>> ReadDTypes(const YamlNode& node, const GpuSpec& g) {
  if (!node.present() || node.IsNull()) {
    std::vector<DType> out = {DType::kBf16, DType::kFp16, DType::kFp32, DType::kInt4};
    if (g.fp8_flops > 0) out.push_back(DType::kFp8);
    if (g.int8_ops > 0) out.push_back(DType::kInt8);
    if (g.fp4_flops > 0) out.push_back(DType::kFp4);
    return out;
  }
  FP_ASSIGN_OR_RETURN(const std::vector<std::string> names, node.AsStringList());
  FP_ASSIGN_OR_RETURN(const std::vector<YamlNode> items, node.Items());
  std::vector<DType> out;
  for (size_t i = 0; i < names.size(); ++i) {
    Expected<DType> t = ParseDType(names[i]);
    if (!t.ok()) return items[i].Error(t.status().message());
    out.push_back(*t);
  }
  return out;
}

Status ReadGpuRates(const YamlNode& node, GpuSpec& g) {
  FP_ASSIGN_OR_RETURN(g.memory, node["memory"].AsBytes());
  if (g.memory.count() <= 0 || g.memory.count() > kMaxMemory) {
    return node["memory"].Error(
        fmt::format("expected a size above 0 and at most 16TiB, got '{}'", node["memory"].Text()));
  }
  FP_ASSIGN_OR_RETURN(g.memory_bandwidth, ReadBandwidth(node["memory_bandwidth"]));
  FP_ASSIGN_OR_RETURN(g.bf16_flops, ReadTflops(node["bf16_tflops"], /*required=*/true));
  FP_ASSIGN_OR_RETURN(g.fp8_flops, ReadTflops(node["fp8_tflops"], /*required=*/false));
  FP_ASSIGN_OR_RETURN(g.int8_ops, ReadTflops(node["int8_tops"], /*required=*/false));
  FP_ASSIGN_OR_RETURN(g.fp4_flops, ReadTflops(node["fp4_tflops"], /*required=*/false));
  return Status::Ok();
}

std::vector<std::string> Names(const std::map<std::string, LinkSpec>& links) {
  std::vector<std::string> out;
  for (const auto& [name, link] : links) out.push_back(name);
  return out;
}

}  // namespace

std::string UserSource(const YamlNode& node) {
  const SourceLocation where = node.location();
  return fmt::format("user catalog {}:{}", where.file, where.line);
}

Expected<GpuSpec> ReadGpuSpec(const YamlNode& node, std::string name,
                              const std::map<std::string, LinkSpec>& links) {
  FP_RETURN_IF_ERROR(node.CheckKeys(kGpuKeys));
  GpuSpec g;
  g.name = std::move(name);
  FP_ASSIGN_OR_RETURN(g.description, node["description"].StringOr(""));
  FP_ASSIGN_OR_RETURN(g.source, node["source"].StringOr(UserSource(node)));
  FP_RETURN_IF_ERROR(ReadGpuRates(node, g));
  FP_ASSIGN_OR_RETURN(g.dtypes, ReadDTypes(node["dtypes"], g));
  FP_ASSIGN_OR_RETURN(g.default_intra_link, node["default_intra_link"].AsString());
  FP_ASSIGN_OR_RETURN(g.peer_to_peer, node["peer_to_peer"].BoolOr(true));
  if (links.find(g.default_intra_link) == links.end()) {
    return node["default_intra_link"].Error(
        UnknownNameMessage("link", g.default_intra_link, Names(links)));
  }
  return g;
}

Expected<LinkSpec> ReadLinkSpec(const YamlNode& node, std::string name) {
  FP_RETURN_IF_ERROR(node.CheckKeys(kLinkKeys));
  LinkSpec l;
  l.name = std::move(name);
  FP_ASSIGN_OR_RETURN(l.description, node["description"].StringOr(""));
  FP_ASSIGN_OR_RETURN(l.source, node["source"].StringOr(UserSource(node)));
  FP_ASSIGN_OR_RETURN(const std::string kind, node["kind"].AsString());
  Expected<LinkKind> parsed = ParseLinkKind(kind);
  if (!parsed.ok()) return node["kind"].Error(parsed.status().message());
  l.kind = *parsed;
  FP_ASSIGN_OR_RETURN(l.bandwidth, ReadBandwidth(node["bandwidth"]));
  FP_ASSIGN_OR_RETURN(l.latency, node["latency"].AsDuration());
  return l;
}

}  // namespace fleetplan::catalog_internal
