// Numeric formats of weights and KV cache, with their storage size.
//
// Sub-byte types are packed: int4 and fp4 store two elements per byte, so sizes are
// computed in bits and rounded up only once, at the end of a tensor (BytesFor). Block
// scales of quantized formats (e.g. one fp8 scale per 32 fp4 values) are not included:
// they belong to a quantization scheme, not to the element type.
// Enum values reach JSON by name (DTypeName), never by number; the numbers must not be
// renumbered all the same.
// Thread model: pure functions over immutable tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"

namespace fleetplan {

enum class DType : int {
  kBf16 = 0,
  kFp16 = 1,
  kFp8 = 2,
  kInt8 = 3,
  kInt4 = 4,
  kFp4 = 5,
  kFp32 = 6
};

// 16, 16, 8, 8, 4, 4, 32.
int BitsPerElement(DType t);
// "bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp32".
std::string_view DTypeName(DType t);
// Exact, case-sensitive names as DTypeName gives them. Unknown names are an InvalidInput
// (not located: the caller adds the location) "unknown dtype 'bf61'; did you mean
// 'bf16'? (valid: ...)".
Expected<DType> ParseDType(std::string_view name);
// Every name, in enum order.
const std::vector<std::string>& DTypeNames();
// Storage of `elements` elements, packed, rounded up to whole bytes.
// REQUIRES: 0 <= elements <= INT64_MAX / 32.
Bytes BytesFor(DType t, int64_t elements);

}  // namespace fleetplan
