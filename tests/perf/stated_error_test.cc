#include "fleetplan/perf/stated_error.h"

#include <gtest/gtest.h>

#include "fleetplan/catalog/catalog.h"

namespace fleetplan {
namespace {

TEST(StatedErrorTest, GpuRowWinsOverTheKindsDefault) {
  EXPECT_DOUBLE_EQ(StatedErrorOf("roofline", "h200-141g").step_time, 0.408);
  EXPECT_DOUBLE_EQ(StatedErrorOf("roofline", "h100-sxm-80g").step_time, 0.484);
  const StatedError other = StatedErrorOf("roofline", "l40s");
  EXPECT_EQ(other.gpu, "");
  EXPECT_DOUBLE_EQ(other.step_time, 0.484);
}

TEST(StatedErrorTest, UnknownKindGetsTheWidestBandAndSaysSo) {
  const StatedError e = StatedErrorOf("my-model", "h100-sxm-80g");
  double widest = 0;
  for (const StatedError& r : StatedErrors()) widest = std::max(widest, r.step_time);
  EXPECT_DOUBLE_EQ(e.step_time, widest);
  EXPECT_NE(e.basis.find("no measured error for step model 'my-model'"), std::string::npos);
}

TEST(StatedErrorTest, EveryRowIsAShareWithABasisAndAKnownGpu) {
  for (const StatedError& r : StatedErrors()) {
    EXPECT_GT(r.step_time, 0) << r.kind << " " << r.gpu;
    EXPECT_LT(r.step_time, 1) << r.kind << " " << r.gpu;
    EXPECT_FALSE(r.basis.empty()) << r.kind << " " << r.gpu;
    if (!r.gpu.empty()) {
      EXPECT_TRUE(Catalog::Builtin().Gpu(r.gpu).ok()) << r.gpu;
    }
  }
}

TEST(StatedErrorTest, EveryKindWithARowHasARowForEveryGpu) {
  for (const StatedError& r : StatedErrors()) {
    EXPECT_EQ(StatedErrorOf(r.kind, "no-such-gpu").gpu, "") << r.kind;
  }
}

}  // namespace
}  // namespace fleetplan
