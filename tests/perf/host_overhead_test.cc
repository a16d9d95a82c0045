// The batch-dependent host overhead: exact nanoseconds on hand-computed steps.
#include "fleetplan/perf/host_overhead.h"

#include <gtest/gtest.h>

#include <vector>

namespace fleetplan {
namespace {

TEST(HostOverhead, SumsItsTermsOverTheStepsBatch) {
  const HostOverhead h{Us(150), Duration::Nanos(12'500), Duration::Nanos(35)};
  // Three decodes and one 512-token prefill chunk: 150 us + 4 * 12.5 us + 512 * 35 ns.
  const std::vector<StepChunk> mixed = {{100, 1, true}, {200, 1, true}, {300, 1, true}, {0, 512, false}};
  EXPECT_EQ(h.Of(Summarize(mixed)).ns(), 150'000 + 4 * 12'500 + 512 * 35);
  // Decodes only: the prompt-token term is 0.
  const std::vector<StepChunk> decodes = {{100, 1, true}, {200, 1, true}};
  EXPECT_EQ(h.Of(Summarize(decodes)).ns(), 175'000);
  // Two prefill chunks (one a later chunk with context): 2 sequences, 300 prompt tokens.
  const std::vector<StepChunk> prefills = {{0, 100, false}, {1024, 200, false}};
  EXPECT_EQ(h.Of(Summarize(prefills)).ns(), 150'000 + 25'000 + 10'500);
  EXPECT_FALSE(h.constant());
  EXPECT_TRUE((HostOverhead{Us(400), Duration(), Duration()}.constant()));
  EXPECT_EQ(HostOverhead{}.Of(Summarize(mixed)), Duration());
  EXPECT_EQ(h.ToJson().dump(), R"({"per_prefill_token_ns":35,"per_sequence_ns":12500,"per_step_ns":150000})");
}

}  // namespace
}  // namespace fleetplan
