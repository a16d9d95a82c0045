// Element formats: sizes, names, packing of sub-byte types.
#include "fleetplan/catalog/dtype.h"

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(DType, BitsAndNames) {
  EXPECT_EQ(BitsPerElement(DType::kBf16), 16);
  EXPECT_EQ(BitsPerElement(DType::kFp16), 16);
  EXPECT_EQ(BitsPerElement(DType::kFp8), 8);
  EXPECT_EQ(BitsPerElement(DType::kInt8), 8);
  EXPECT_EQ(BitsPerElement(DType::kInt4), 4);
  EXPECT_EQ(BitsPerElement(DType::kFp4), 4);
  EXPECT_EQ(BitsPerElement(DType::kFp32), 32);
  EXPECT_EQ(DTypeNames(),
            (std::vector<std::string>{"bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp32"}));
}

TEST(DType, EveryNameRoundTrips) {
  for (const std::string& name : DTypeNames()) {
    Expected<DType> t = ParseDType(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(DTypeName(*t), name);
  }
}

TEST(DType, UnknownNameSuggestsTheNearest) {
  Expected<DType> t = ParseDType("bf61");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(t.status().message(),
            "unknown dtype 'bf61'; did you mean 'bf16'? (valid: bf16, fp16, fp8, int8, int4, fp4, "
            "fp32)");
}

TEST(DType, NamesAreCaseSensitive) { EXPECT_FALSE(ParseDType("BF16").ok()); }

TEST(BytesFor, WholeBytesForByteFormats) {
  EXPECT_EQ(BytesFor(DType::kBf16, 3).count(), 6);
  EXPECT_EQ(BytesFor(DType::kFp8, 3).count(), 3);
  EXPECT_EQ(BytesFor(DType::kFp32, 3).count(), 12);
  EXPECT_EQ(BytesFor(DType::kBf16, 0).count(), 0);
}

TEST(BytesFor, SubByteFormatsArePackedAndRoundedUpOnce) {
  EXPECT_EQ(BytesFor(DType::kInt4, 1).count(), 1);
  EXPECT_EQ(BytesFor(DType::kInt4, 2).count(), 1);
  EXPECT_EQ(BytesFor(DType::kInt4, 3).count(), 2);
  EXPECT_EQ(BytesFor(DType::kFp4, 8'030'261'248).count(), 4'015'130'624);
}

}  // namespace
}  // namespace fleetplan
