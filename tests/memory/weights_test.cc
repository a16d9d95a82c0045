// Weight memory: totals, the per-rank share of every term, stage splits, replication.
// Expected figures are worked out by hand in the comments from the shapes in test_specs.h.
#include "fleetplan/memory/weights.h"

#include <algorithm>
#include <numeric>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "memory/test_specs.h"

namespace fleetplan {
namespace {

using memory_test::Dense70b;
using memory_test::Inputs;
using memory_test::MlaModel;
using memory_test::Show;
using memory_test::SmallMoe;
using memory_test::Windowed;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const WeightTerm& Term(const WeightsPlan& w, std::string_view name) {
  auto it = std::find_if(w.terms.begin(), w.terms.end(),
                         [&](const WeightTerm& t) { return t.name == name; });
  EXPECT_NE(it, w.terms.end()) << "no term " << name;
  return *it;
}

// Dense 70B: embedding = lm_head = 128256 × 8192 = 1,050,673,152; attention per layer
// q 8192² + k, v 2 × 8192 × 1024 + o 8192² = 150,994,944, × 80 = 12,079,595,520; FFN 3 × 8192
// × 28672 × 80 = 56,371,445,760; norms 80 × 2 × 8192 + 8192 = 1,318,912.
constexpr int64_t kEmbedding = 1'050'673'152;
constexpr int64_t kAttention = 12'079'595'520;
constexpr int64_t kKvProjections = 80LL * 2 * 8192 * 1024;  // 1,342,177,280
constexpr int64_t kFfn = 56'371'445'760;
constexpr int64_t kNorms = 1'318'912;
constexpr int64_t kDenseTotal = 2 * kEmbedding + kAttention + kFfn + kNorms;

TEST(PlanWeights, DenseTotalAndPerRankAtTp4) {
  const WeightsPlan w = PlanWeights(Inputs(Dense70b(), 4));
  EXPECT_EQ(w.params_total, kDenseTotal);
  EXPECT_EQ(w.params_total, 70'553'706'496);
  EXPECT_EQ(w.bytes_total.count(), 2 * kDenseTotal);  // bf16: 2 bytes per parameter
  // Everything but the replicated norms is split four ways (all counts divide by 4).
  const int64_t per_rank_params = (2 * kEmbedding + kAttention + kFfn) / 4 + kNorms;
  ASSERT_EQ(w.bytes_per_rank.size(), 1u);
  EXPECT_EQ(w.bytes_per_rank[0].count(), 2 * per_rank_params);
  EXPECT_EQ(w.bytes_per_rank[0].count(), 35'278'831'616);
  EXPECT_EQ(w.replica_bytes.count(), 4 * 35'278'831'616);
  Show("weights: {} params × 2 B = {} B ({:.2f} GiB); per rank at tp 4: ({} + {} + {}) / 4 + "
       "{} norms = {} params × 2 B = {} B ({:.2f} GiB)",
       w.params_total, w.bytes_total.count(), w.bytes_total.gib(), 2 * kEmbedding, kAttention,
       kFfn, kNorms, per_rank_params, w.bytes_per_rank[0].count(), w.bytes_per_rank[0].gib());
}

TEST(PlanWeights, TermsAddUpToTheCatalogCount) {
  for (const MemoryInputs& in : {Inputs(Dense70b(), 8, 2), Inputs(SmallMoe(), 4, 4),
                                 Inputs(MlaModel(), 4, 2), Inputs(Windowed(), 2, 3)}) {
    const WeightsPlan w = PlanWeights(in);
    const int64_t sum = std::accumulate(w.terms.begin(), w.terms.end(), int64_t{0},
                                        [](int64_t a, const WeightTerm& t) { return a + t.params; });
    EXPECT_EQ(sum, CountParams(in.model).total()) << in.model.name;
    EXPECT_EQ(w.params_total, CountParams(in.model).total()) << in.model.name;
  }
}

TEST(PlanWeights, EachTermStatesItsSplit) {
  const WeightsPlan w = PlanWeights(Inputs(Dense70b(), 4));
  EXPECT_EQ(Term(w, "embedding").sharding, "vocab-parallel TP/4");
  EXPECT_THAT(Term(w, "embedding").params_per_rank, ElementsAre(kEmbedding / 4));
  EXPECT_EQ(Term(w, "attention k/v").sharding, "TP/4 (2 of 8 KV heads per rank)");
  EXPECT_THAT(Term(w, "attention k/v").params_per_rank, ElementsAre(kKvProjections / 4));
  EXPECT_EQ(Term(w, "norms").sharding, "replicated");
  EXPECT_THAT(Term(w, "norms").params_per_rank, ElementsAre(kNorms));
  EXPECT_THAT(w.notes, testing::Contains("norms are replicated on every rank"));
  EXPECT_THAT(w.notes, testing::Contains(
                           "embedding and LM head are vocab-parallel: vocab/tp rows per rank"));
}

TEST(PlanWeights, KvHeadsReplicatedWhenTpExceedsThem) {
  // tp 16 > 8 KV heads: each rank holds one KV head's K/V projections (1/8, not 1/16).
  const WeightsPlan w = PlanWeights(Inputs(Dense70b(), 16));
  const WeightTerm& kv = Term(w, "attention k/v");
  EXPECT_EQ(kv.sharding, "1 of 8 KV heads per rank, each on 2 ranks");
  EXPECT_THAT(kv.params_per_rank, ElementsAre(kKvProjections / 8));
  EXPECT_THAT(w.notes, testing::Contains(
                           "tp 16 > 8 KV heads: each K/V projection head is replicated on 2 ranks"));
  // The replica holds the K/V projections twice over.
  EXPECT_EQ(kv.bytes_per_rank[0].count() * 16, 2 * kv.bytes.count());
}

TEST(SplitStages, FollowsVllmRemainderRule) {
  // 80 / 3 = 26 rem 2: the stages before the last get one more each.
  std::vector<int64_t> sizes;
  for (const StageLayers& s : SplitStages(Dense70b(), 3)) sizes.push_back(s.layers);
  EXPECT_THAT(sizes, ElementsAre(27, 27, 26));
  ModelSpec ten = Dense70b();
  ten.layers = 10;
  sizes.clear();
  for (const StageLayers& s : SplitStages(ten, 4)) sizes.push_back(s.layers);
  EXPECT_THAT(sizes, ElementsAre(2, 3, 3, 2));
}

TEST(SplitStages, CountsGlobalAndWindowedLayersPerStage) {
  // Every 2nd layer global (layers 1, 3, ..., 45): stage 0 = layers 0..22 holds 11 global,
  // stage 1 = layers 23..45 holds 12.
  const std::vector<StageLayers> s = SplitStages(Windowed(), 2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].layers, 23);
  EXPECT_EQ(s[0].global_layers, 11);
  EXPECT_EQ(s[0].windowed_layers, 12);
  EXPECT_EQ(s[1].global_layers, 12);
  EXPECT_EQ(s[1].windowed_layers, 11);
  EXPECT_EQ(s[0].global_layers + s[1].global_layers, GlobalLayers(Windowed()));
  EXPECT_EQ(s[0].windowed_layers + s[1].windowed_layers, WindowedLayers(Windowed()));
}

TEST(PlanWeights, PipelineStagesHoldTheirLayersAndEnds) {
  const WeightsPlan w = PlanWeights(Inputs(Dense70b(), 1, 2));
  const WeightTerm& emb = Term(w, "embedding");
  EXPECT_THAT(emb.params_per_rank, ElementsAre(kEmbedding, 0));
  EXPECT_THAT(Term(w, "lm head").params_per_rank, ElementsAre(0, kEmbedding));
  EXPECT_THAT(Term(w, "dense ffn").params_per_rank, ElementsAre(kFfn / 2, kFfn / 2));
  EXPECT_EQ(emb.sharding, "vocab-parallel TP/1, first stage");
}

TEST(PlanWeights, TiedEmbeddingsCopiedToTheLastStage) {
  // 256000 × 4608 = 1,179,648,000 parameters; the last stage loads them again for the head.
  const WeightsPlan w = PlanWeights(Inputs(Windowed(), 2, 2));
  const WeightTerm& copy = Term(w, "lm head (copy of the tied embedding)");
  EXPECT_EQ(copy.params, 0);
  EXPECT_THAT(copy.params_per_rank, ElementsAre(0, 1'179'648'000 / 2));
  EXPECT_THAT(w.notes, testing::Contains(HasSubstr("tied embeddings with pp > 1")));
  // With one stage there is no copy.
  const WeightsPlan one = PlanWeights(Inputs(Windowed(), 2, 1));
  EXPECT_TRUE(std::none_of(one.terms.begin(), one.terms.end(),
                           [](const WeightTerm& t) { return t.name.find("copy") != std::string::npos; }));
}

TEST(PlanWeights, NarrowWeightsKeepEmbeddingsAndNormsWide) {
  MemoryInputs in = Inputs(Dense70b(), 4);
  in.weight_dtype = DType::kFp8;
  const WeightsPlan w = PlanWeights(in);
  EXPECT_EQ(Term(w, "embedding").dtype, DType::kBf16);
  EXPECT_EQ(Term(w, "norms").dtype, DType::kBf16);
  EXPECT_EQ(Term(w, "dense ffn").dtype, DType::kFp8);
  // per rank: (embedding + lm_head) / 4 × 2 B + (attention + FFN) / 4 × 1 B + norms × 2 B
  const int64_t expected = 2 * kEmbedding / 4 * 2 + (kAttention + kFfn) / 4 + kNorms * 2;
  EXPECT_EQ(w.bytes_per_rank[0].count(), expected);
  Show("fp8 weights per rank: {} × 2 B + {} × 1 B + {} × 2 B = {} B ({:.2f} GiB)",
       2 * kEmbedding / 4, (kAttention + kFfn) / 4, kNorms, expected, w.bytes_per_rank[0].gib());
}

TEST(PlanWeights, MoeExpertsSplitByEpAndActiveBytes) {
  // 8 experts × 32 layers × 3 × 4096 × 14336 = 45,097,156,608 expert parameters.
  constexpr int64_t kExperts = 45'097'156'608;
  MemoryInputs in = Inputs(SmallMoe(), 4);
  in.layout.ep = 2;
  const WeightsPlan w = PlanWeights(in);
  const WeightTerm& experts = Term(w, "routed experts");
  EXPECT_EQ(experts.params, kExperts);
  EXPECT_EQ(experts.sharding, "EP 2 × TP/2: 4 of 8 experts per rank");
  EXPECT_THAT(experts.params_per_rank, ElementsAre(kExperts / 4));
  EXPECT_EQ(Term(w, "router").sharding, "replicated");
  EXPECT_THAT(Term(w, "router").params_per_rank, ElementsAre(32 * 4096 * 8));
  // Active per token: everything but the 6 of 8 experts a token skips (Mixtral: 12.9B).
  EXPECT_EQ(w.params_total, 46'702'792'704);
  EXPECT_EQ(w.active_params_per_token, 46'702'792'704 - kExperts / 8 * 6);
  EXPECT_EQ(w.active_params_per_token, CountParams(in.model).active_per_token);
  EXPECT_EQ(w.active_bytes_per_token.count(), 2 * w.active_params_per_token);
  Show("MoE: resident {} B ({:.2f} GiB), active per token {} params = {} B ({:.2f} GiB)",
       w.bytes_total.count(), w.bytes_total.gib(), w.active_params_per_token,
       w.active_bytes_per_token.count(), w.active_bytes_per_token.gib());
}

TEST(PlanWeights, MlaDownProjectionsReplicated) {
  // Per layer: q_a 2048 × 1536 + kv_a 2048 × (512 + 64) = 4,325,376 replicated, latent norms
  // 1536 + 512 replicated, q_b + kv_b + o = 11,010,048 sharded.
  const WeightsPlan w = PlanWeights(Inputs(MlaModel(), 4));
  EXPECT_THAT(Term(w, "attention q_a/kv_a down (MLA)").params_per_rank, ElementsAre(4 * 4'325'376));
  EXPECT_THAT(Term(w, "attention latent norms (MLA)").params_per_rank, ElementsAre(4 * 2048));
  EXPECT_THAT(Term(w, "attention q/kv up, o (MLA)").params_per_rank,
              ElementsAre(4 * 11'010'048 / 4));
}

}  // namespace
}  // namespace fleetplan
