// Runtime strategies: one factory, a shared contract, and what each one refuses
// (plan/runtime_support.h).
#include "fleetplan/plan/runtime_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"

namespace fleetplan {
namespace {

TEST(RuntimeSupport, FactoryBuildsEveryListedNameAndListsThemOnError) {
  EXPECT_EQ(RuntimeNames(), (std::vector<std::string>{"sglang", "trtllm", "vllm"}));
  for (const std::string& name : RuntimeNames()) {
    Expected<std::unique_ptr<RuntimeSupport>> r = MakeRuntimeSupport(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ((*r)->name(), name);
  }
  EXPECT_EQ(MakeRuntimeSupport("sglnag").status().message(),
            "unknown runtime 'sglnag'; did you mean 'sglang'? (valid: sglang, trtllm, vllm)");
}

// Every runtime runs plain tensor and pipeline parallelism, and expert parallelism over
// the whole tp group.
TEST(RuntimeSupport, EveryRuntimeRunsTheCommonCompositions) {
  const ModelSpec moe = *Catalog::Builtin().Model("mixtral-8x7b");
  for (const std::string& name : RuntimeNames()) {
    const auto r = std::move(MakeRuntimeSupport(name)).value();
    for (const Parallelism p : {Parallelism{1, 1, 1}, Parallelism{8, 1, 1}, Parallelism{4, 2, 1}, Parallelism{8, 1, 8},
                                Parallelism{2, 4, 2}}) {
      EXPECT_FALSE(r->Refuse(moe, p).has_value()) << name << " tp " << p.tp << " pp " << p.pp << " ep " << p.ep;
    }
  }
}

TEST(RuntimeSupport, OnlyVllmRefusesPartialExpertParallelism) {
  const ModelSpec moe = *Catalog::Builtin().Model("mixtral-8x7b");
  const Parallelism partial{8, 1, 4};
  EXPECT_EQ(MakeRuntimeSupport("vllm").value()->Refuse(moe, partial).value(),
            "vllm runs expert parallelism over the whole tp group (--enable-expert-parallel: ep = tp = 8); ep 4 inside "
            "it is not offered");
  EXPECT_FALSE(MakeRuntimeSupport("sglang").value()->Refuse(moe, partial).has_value());
  EXPECT_FALSE(MakeRuntimeSupport("trtllm").value()->Refuse(moe, partial).has_value());
}

}  // namespace
}  // namespace fleetplan
