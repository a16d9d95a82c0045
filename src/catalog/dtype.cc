#include "fleetplan/catalog/dtype.h"

#include <array>
#include <string>

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bits;
};

// In enum order; DTypeNames() and ParseDType() read this table only.
constexpr std::array<DTypeInfo, 7> kDTypes = {{
    {DType::kBf16, "bf16", 16},
    {DType::kFp16, "fp16", 16},
    {DType::kFp8, "fp8", 8},
    {DType::kInt8, "int8", 8},
    {DType::kInt4, "int4", 4},
    {DType::kFp4, "fp4", 4},
    {DType::kFp32, "fp32", 32},
}};

const DTypeInfo& Info(DType t) {
  const auto index = static_cast<size_t>(t);
  FP_ASSERT(index < kDTypes.size() && kDTypes[index].type == t);
  return kDTypes[index];
}

}  // namespace

int BitsPerElement(DType t) { return Info(t).bits; }

std::string_view DTypeName(DType t) { return Info(t).name; }

const std::vector<std::string>& DTypeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const DTypeInfo& info : kDTypes) out.emplace_back(info.name);
    return out;
  }();
  return names;
}

Expected<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return InvalidInput(UnknownNameMessage("dtype", name, DTypeNames()));
}

Bytes BytesFor(DType t, int64_t elements) {
  constexpr int64_t kMaxBits = 32;  // widest format; bounds the multiplication below
  FP_ASSERT(elements >= 0 && elements <= INT64_MAX / kMaxBits);
  const int64_t bits = elements * BitsPerElement(t);
  return Bytes((bits + 7) / 8);
}

}  // namespace fleetplan
