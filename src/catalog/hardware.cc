#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/native_dtype.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

struct LinkKindInfo {
  LinkKind kind;
  std::string_view name;
};

// In enum order.
constexpr std::array<LinkKindInfo, 6> kLinkKinds = {{
    {LinkKind::kNvlink, "nvlink"},
    {LinkKind::kPcie, "pcie"},
    {LinkKind::kInfiniband, "infiniband"},
    {LinkKind::kRoce, "roce"},
    {LinkKind::kEthernet, "ethernet"},
    {LinkKind::kXgmi, "xgmi"},
}};

struct BandwidthUnit {
  std::string_view suffix;  // without "/s"
  double bytes_per_unit;
};

// Longest suffixes first so "GiB" is not read as "B" after a number.
constexpr double kBitsPerByte = 8.0;
constexpr std::array<BandwidthUnit, 13> kBandwidthUnits = {{
    {"KiB", 1024.0},
    {"MiB", 1024.0 * 1024.0},
    {"GiB", 1024.0 * 1024.0 * 1024.0},
    {"TiB", 1024.0 * 1024.0 * 1024.0 * 1024.0},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"Kb", 1e3 / kBitsPerByte},
    {"Mb", 1e6 / kBitsPerByte},
    {"Gb", 1e9 / kBitsPerByte},
    {"Tb", 1e12 / kBitsPerByte},
    {"B", 1.0},
}};

Status BandwidthError(std::string_view text) {
  return InvalidInput(
      fmt::format("expected a bandwidth with a unit per second (B/s, KB/s, MB/s, "
                  "GB/s, TB/s, KiB/s .. TiB/s, or bits: Kb/s .. Tb/s), e.g. "
                  "'450GB/s' or '400Gb/s', got '{}'",
                  text));
}

}  // namespace

Expected<double> ParseBandwidth(std::string_view text) {
  constexpr std::string_view kPerSecond = "/s";
  if (text.size() <= kPerSecond.size() || !text.ends_with(kPerSecond)) return BandwidthError(text);
  const std::string_view quantity = text.substr(0, text.size() - kPerSecond.size());
  for (const BandwidthUnit& unit : kBandwidthUnits) {
    if (!quantity.ends_with(unit.suffix)) continue;
    std::string_view number = quantity.substr(0, quantity.size() - unit.suffix.size());
    while (!number.empty() && number.back() == ' ') number.remove_suffix(1);
    double value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
        !std::isfinite(value) || value < 0) {
      return BandwidthError(text);
    }
    return value * unit.bytes_per_unit;
  }
  return BandwidthError(text);
}

bool GpuSpec::Supports(DType t) const {
  return std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end();
}

std::string NativeDTypeGap(const GpuSpec& gpu, std::string_view label, DType t, std::string_view what) {
  if (gpu.Supports(t)) return "";
  std::vector<std::string> formats;
  for (const DType d : gpu.dtypes) formats.emplace_back(DTypeName(d));
  return fmt::format("{} has no native {} for the {} (its formats: {})", label, DTypeName(t), what,
                     fmt::join(formats, ", "));
}

double GpuSpec::PeakFlops(DType t) const {
  // fp32 matmuls run as TF32 on tensor cores, at half the bf16 rate on every built-in GPU
  // (A100 156 vs 312, H100 SXM 494.7 vs 989.4, MI300X 653.7 vs 1307.4 TFLOPS dense).
  constexpr double kTf32PerBf16 = 0.5;
  double native = 0;
  switch (t) {
    case DType::kFp8:
      native = fp8_flops;
      break;
    case DType::kInt8:
      native = int8_ops;
      break;
    case DType::kFp4:
      native = fp4_flops;
      break;
    case DType::kFp32:
      return bf16_flops * kTf32PerBf16;
    case DType::kBf16:
    case DType::kFp16:
    case DType::kInt4:
      native = 0;
      break;
  }
  return native > 0 ? native : bf16_flops;
}

std::string_view LinkKindName(LinkKind k) {
  const auto index = static_cast<size_t>(k);
  FP_ASSERT(index < kLinkKinds.size() && kLinkKinds[index].kind == k);
  return kLinkKinds[index].name;
}

const std::vector<std::string>& LinkKindNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LinkKindInfo& info : kLinkKinds) out.emplace_back(info.name);
    return out;
  }();
  return names;
}

Expected<LinkKind> ParseLinkKind(std::string_view name) {
  for (const LinkKindInfo& info : kLinkKinds) {
    if (info.name == name) return info.kind;
  }
  return InvalidInput(UnknownNameMessage("link kind", name, LinkKindNames()));
}

}  // namespace fleetplan
