// The roofline model on built-in catalog entries: the Atlas model (atlas-70b) on H100 at
// TP4 worked by hand (decode memory-bound, prefill compute-bound), monotonicity, MoE
// touched experts, MLA latent KV, sliding windows, pipeline handoffs, padding.
#include "fleetplan/perf/roofline.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/memory/weights.h"
#include "perf/perf_test_util.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using perf_test::Decode;
using perf_test::Decodes;
using perf_test::Prefill;
using perf_test::Show;
using perf_test::Yaml;

RooflineInputs Inputs(const char* model, int64_t tp, int64_t pp = 1, int64_t ep = 1,
                      const char* gpu = "h100-sxm-80g") {
  const Catalog& c = Catalog::Builtin();
  RooflineInputs in;
  in.memory.model = c.Model(model).value();
  in.memory.gpu = c.Gpu(gpu).value();
  in.memory.layout = Parallelism{tp, pp, ep};
  in.memory.max_running = 256;
  in.tp_link = c.Link("nvlink4").value();
  in.pp_link = c.Link("ib-ndr-400").value();
  return in;
}

double Nanos(Duration d) { return static_cast<double>(d.ns()); }

std::unique_ptr<RooflineStepModel> Make(const RooflineInputs& in) {
  auto m = RooflineStepModel::Create(in);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.status().message());
  return std::move(m).value();
}

// Atlas (Llama-3.1-70B shape) at TP4, bf16, per rank (memory/weights_test.cc has the counts):
//   linear params = (attention 12,079,595,520 + FFN 56,371,445,760) / 4 + norms 1,318,912
//                 = 17,114,079,232
//   LM head       = 1,050,673,152 / 4 = 262,668,288 params
//   weights read  = 2 × (17,114,079,232 + 262,668,288) = 34,753,495,040 B (the embedding,
//                   a row gather, is not read whole)
// H100 SXM: 989.5 TFLOP/s bf16 × 0.8, 3.35 TB/s × 0.8.
constexpr double kLinearParams = 17'114'079'232.0;
constexpr double kHeadParams = 262'668'288.0;
constexpr double kWeightBytes = 34'753'495'040.0;
constexpr double kFlops = 989.5e12 * 0.8;
constexpr double kBandwidth = 3.35e12 * 0.8;
constexpr double kKvBytesPerLayer = 2 * 128 * 2 * 2;  // 2 KV heads per rank × K,V × bf16

TEST(Roofline, AtlasTp4DecodeIsMemoryBound) {
  const auto model = Make(Inputs("atlas-70b", 4));
  const std::vector<StepChunk> step = Decodes(32, 2000);
  const RooflineBreakdown b = model->Explain(step);
  const double flops = 2 * 32 * (kLinearParams + kHeadParams);
  const double kv = 80 * kKvBytesPerLayer * 32 * 2001;
  Show("decode 32 × ctx 2000, atlas-70b TP4 on H100:");
  Show("  linear: {:.4g} FLOP / {:.4g} FLOP/s = {:.3f} ms vs {:.4g} B / {:.4g} B/s = {:.3f} ms",
       b.linear_flops, kFlops, b.linear_compute.millis(), b.weight_bytes, kBandwidth,
       b.linear_memory.millis());
  Show("  attention: {:.4g} FLOP = {:.3f} ms vs KV {:.4g} B = {:.3f} ms", b.attention_flops,
       b.attention_compute.millis(), b.kv_bytes, b.attention_memory.millis());
  Show("  collectives: 160 all-reduces of 32 × 8192 × 2 B = {:.3f} ms; step {:.3f} ms",
       b.collectives.millis(), b.total.millis());
  EXPECT_DOUBLE_EQ(b.linear_flops, flops);
  EXPECT_DOUBLE_EQ(b.weight_bytes, kWeightBytes);
  EXPECT_DOUBLE_EQ(b.kv_bytes, kv);
  EXPECT_TRUE(b.linear_memory_bound);
  EXPECT_TRUE(b.attention_memory_bound);
  EXPECT_NEAR(Nanos(b.linear), kWeightBytes / kBandwidth * 1e9, 1);    // 12.968 ms
  EXPECT_NEAR(Nanos(b.attention), kv / kBandwidth * 1e9, 1);           // 1.957 ms
  // Ring all-reduce over 4 ranks of 524,288 B: 6 × 0.6 us + 1.5 × 524288 / 450e9 s.
  const Duration all_reduce = Ns(3600) + Ns(std::llround(1.5 * 524288 / 450e9 * 1e9));
  EXPECT_EQ(b.collectives, all_reduce * 160);
  EXPECT_EQ(b.total, b.linear + b.attention + b.collectives);
  EXPECT_EQ(model->Cost(step).gpu, b.total);
  EXPECT_EQ(model->Cost(step).collectives, b.collectives);
}

TEST(Roofline, AtlasTp4PrefillIsComputeBound) {
  const auto model = Make(Inputs("atlas-70b", 4));
  const std::vector<StepChunk> step = {Prefill(4096)};
  const RooflineBreakdown b = model->Explain(step);
  const double flops = 2 * (4096 * kLinearParams + 1 * kHeadParams);
  // Causal pairs 4096 × 4097 / 2; 4 × 16 heads × 128 FLOP per pair per layer, 80 layers.
  const double attn_flops = 4.0 * 16 * 128 * (4096.0 * 4097 / 2) * 80;
  Show("prefill 4096 tokens, atlas-70b TP4 on H100:");
  Show("  linear: {:.4g} FLOP = {:.3f} ms vs {:.4g} B = {:.3f} ms", b.linear_flops,
       b.linear_compute.millis(), b.weight_bytes, b.linear_memory.millis());
  Show("  attention: {:.4g} FLOP = {:.3f} ms vs KV {:.4g} B = {:.3f} ms", b.attention_flops,
       b.attention_compute.millis(), b.kv_bytes, b.attention_memory.millis());
  Show("  collectives: 160 all-reduces of 4096 × 8192 × 2 B = {:.3f} ms; step {:.3f} ms",
       b.collectives.millis(), b.total.millis());
  EXPECT_DOUBLE_EQ(b.linear_flops, flops);
  EXPECT_DOUBLE_EQ(b.attention_flops, attn_flops);
  EXPECT_FALSE(b.linear_memory_bound);
  EXPECT_FALSE(b.attention_memory_bound);
  EXPECT_NEAR(Nanos(b.linear), flops / kFlops * 1e9, 1);  // 177.1 ms
  EXPECT_NEAR(Nanos(b.attention), attn_flops / (989.5e12 * 0.55) * 1e9, 1);
}

TEST(Roofline, MonotonicInTokensAndContext) {
  const auto model = Make(Inputs("atlas-70b", 4));
  Duration previous;
  for (int64_t tokens = 1; tokens <= 8192; tokens += 97) {
    const std::vector<StepChunk> step = {Prefill(tokens, 1000)};
    const Duration d = model->Cost(step).gpu;
    EXPECT_GE(d, previous) << tokens;
    previous = d;
  }
  previous = Duration();
  for (int64_t context = 0; context <= 131072; context += 4099) {
    const Duration d = model->Cost(Decodes(16, context)).gpu;
    EXPECT_GE(d, previous) << context;
    previous = d;
  }
  previous = Duration();
  for (int64_t batch = 1; batch <= 256; ++batch) {
    const Duration d = model->Cost(Decodes(batch, 1000)).gpu;
    EXPECT_GE(d, previous) << batch;
    previous = d;
  }
  // Prefill chunks behind a longer cached context cost more (attention over the context).
  const std::vector<StepChunk> short_ctx = {Prefill(512, 0)};
  const std::vector<StepChunk> long_ctx = {Prefill(512, 30000)};
  EXPECT_LT(model->Cost(short_ctx).gpu, model->Cost(long_ctx).gpu);
}

TEST(Roofline, PaddingEqualsExtraDecodes) {
  const auto model = Make(Inputs("atlas-70b", 4));
  std::vector<StepChunk> real = {Decode(100), Decode(700)};
  std::vector<StepChunk> padded = real;
  padded.insert(padded.end(), 3, Decode(400));
  EXPECT_NEAR(Nanos(model->CostPadded(real, StepPadding{3, 400}).gpu), Nanos(model->Cost(padded).gpu), 1);
}

TEST(Roofline, PipelineAddsOneHandoffPerStageBoundary) {
  const auto model = Make(Inputs("atlas-70b", 4, 2));
  const RooflineBreakdown b = model->Explain(Decodes(8, 100));
  const Bytes activations(8 * 8192 * 2);
  const LinkCost nvlink = LinkCost::Of(Catalog::Builtin().Link("nvlink4").value());
  const LinkCost ib = LinkCost::Of(Catalog::Builtin().Link("ib-ndr-400").value());
  EXPECT_EQ(b.collectives, AllReduceRingTime(4, activations, nvlink) * 160 + SendRecvTime(activations, ib));
  // The stages run one after the other: the same weights are read as with pp = 1.
  const RooflineBreakdown one = Make(Inputs("atlas-70b", 4))->Explain(Decodes(8, 100));
  EXPECT_DOUBLE_EQ(b.weight_bytes, one.weight_bytes);
}

TEST(Roofline, MoeReadsOnlyTheExpertsAStepCanTouch) {
  const RooflineInputs in = Inputs("mixtral-8x7b", 2);
  const auto model = Make(in);
  const WeightsPlan w = PlanWeights(in.memory);
  double routed = 0, embedding = 0;
  for (const WeightTerm& t : w.terms) {
    if (t.name == "routed experts") routed = static_cast<double>(t.bytes_per_rank[0].count());
    if (t.name == "embedding") embedding = static_cast<double>(t.bytes_per_rank[0].count());
  }
  ASSERT_GT(routed, 0);
  const double rest = static_cast<double>(w.bytes_per_rank[0].count()) - routed - embedding;
  // One token, top-2 of 8: at most 2 experts per layer -> a quarter of the expert bytes.
  EXPECT_DOUBLE_EQ(model->Explain(Decodes(1, 10)).weight_bytes, rest + routed * 2 / 8);
  EXPECT_DOUBLE_EQ(model->Explain(Decodes(3, 10)).weight_bytes, rest + routed * 6 / 8);
  // Four tokens can touch all 8; more tokens read no more.
  EXPECT_DOUBLE_EQ(model->Explain(Decodes(4, 10)).weight_bytes, rest + routed);
  EXPECT_DOUBLE_EQ(model->Explain(Decodes(64, 10)).weight_bytes, rest + routed);
  // EP 2: a rank holds 4 experts (each TP/1 inside its group); 1 token touches at most 2 of
  // them, so the busiest rank reads half its expert bytes.
  RooflineInputs ep = in;
  ep.memory.layout.ep = 2;
  EXPECT_DOUBLE_EQ(Make(ep)->Explain(Decodes(1, 10)).weight_bytes, rest + routed / 2);
  Show("mixtral-8x7b TP2: non-expert {:.4g} B + routed experts {:.4g} B per rank", rest, routed);
}

TEST(Roofline, MlaCachesOneLatentPerTokenNotShardedByTp) {
  for (int64_t tp : {1, 8}) {
    const auto model = Make(Inputs("deepseek-v3", tp, 1, 1, "h200-141g"));
    const Json d = model->Describe();
    // (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 bytes, on every rank.
    EXPECT_EQ(d["kv_bytes_per_token_per_layer_per_rank"], 1152.0) << tp;
    const double heads = 128.0 / static_cast<double>(tp);
    EXPECT_EQ(d["attention_flops_per_pair_per_layer_per_rank"]["decode"], heads * (4 * 512 + 2 * 64));
    EXPECT_EQ(d["attention_flops_per_pair_per_layer_per_rank"]["prefill"], heads * (2 * (128 + 64) + 2 * 128));
  }
}

TEST(Roofline, SlidingWindowCapsWhatWindowedLayersRead) {
  // gemma-2-27b: 46 layers, every second one global, the others windowed at 4096 tokens.
  const RooflineInputs in = Inputs("gemma-2-27b", 2);
  const auto model = Make(in);
  const Json d = model->Describe();
  EXPECT_EQ(d["windowed_window_tokens"], 4096);
  const RooflineBreakdown near = model->Explain(Decodes(4, 10'000));
  const RooflineBreakdown far = model->Explain(Decodes(4, 100'000));
  // Only the 23 global layers read the 90,000 extra tokens of each of the 4 sequences.
  const double per_layer = d["kv_bytes_per_token_per_layer_per_rank"].get<double>();
  EXPECT_DOUBLE_EQ(far.kv_bytes - near.kv_bytes, 23 * per_layer * 4 * 90'000);
  // Below the window both kinds of layer read the whole context.
  const RooflineBreakdown small = model->Explain(Decodes(1, 999));
  EXPECT_DOUBLE_EQ(small.kv_bytes, 46 * per_layer * 1000);
}

TEST(Roofline, PrefillCostPerTokenIsTheAmortisedProbe) {
  const auto model = Make(Inputs("atlas-70b", 4));
  const std::vector<StepChunk> probe = {Prefill(512)};
  EXPECT_EQ(model->PrefillCostPerToken(), model->Cost(probe).gpu / 512);
}

TEST(RooflineParse, EfficienciesAreOptionalAndRangeChecked) {
  const YamlDocument doc = Yaml(
      "ok: {kind: roofline, compute_efficiency: 0.6, memory_efficiency: 0.9}\n"
      "bad: {kind: roofline, memory_efficiency: 1.5}\n"
      "typo: {kind: roofline, compute_eficiency: 0.5}\n");
  const auto ok = RooflineStepModel::Parse(doc.root()["ok"]);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->compute_efficiency, 0.6);
  EXPECT_EQ(ok->memory_efficiency, 0.9);
  EXPECT_EQ(ok->attention_efficiency, kDefaultAttentionEfficiency);
  const auto bad = RooflineStepModel::Parse(doc.root()["bad"]);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "scenario.yaml:2:42: bad.memory_efficiency: expected a number in (0, 1], got 1.5\n"
            "    2 | bad: {kind: roofline, memory_efficiency: 1.5}\n"
            "      |                                          ^\n");
  const auto typo = RooflineStepModel::Parse(doc.root()["typo"]);
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.status().message(),
              ::testing::HasSubstr("unknown field 'compute_eficiency'; did you mean "
                                   "'compute_efficiency'?"));
}

TEST(RooflineCreate, RejectsLayoutsTheMemoryPlannerRejects) {
  RooflineInputs in = Inputs("atlas-70b", 3);
  const auto m = RooflineStepModel::Create(in);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), ::testing::StartsWith("tp: "));
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

// Llama-2-70B (Splitwise's model): the Atlas shape with a 32,000-token vocabulary.
ModelSpec Llama2_70b() {
  ModelSpec m = Catalog::Builtin().Model("atlas-70b").value();
  m.name = "llama-2-70b";
  m.vocab = 32000;
  m.max_context = 4096;
  return m;
}

struct SplitwiseMean {
  double prompt_ms = 0;
  double token_ms = 0;
  int rows = 0;
};

// profiles/splitwise-sim/perf_model.csv, llama2-70b on h100-80gb (DGX-H100), TP4: the mean
// over repeats of prompt_time (prefill of the batch) and token_time (one decode iteration).
SplitwiseMean Splitwise(int64_t prompt, int64_t batch) {
  std::ifstream in(::fleetplan::testing::SharedDataRoot() + "/profiles/splitwise-sim/perf_model.csv");
  EXPECT_TRUE(in.good());
  std::string line;
  std::getline(in, line);
  SplitwiseMean mean;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() != 11 || f[0] != "llama2-70b" || f[1] != "h100-80gb" || f[10] != "4") continue;
    if (std::stoll(f[2]) != prompt || std::stoll(f[3]) != batch) continue;
    mean.prompt_ms += std::stod(f[7]);
    mean.token_ms += std::stod(f[8]);
    mean.rows += 1;
  }
  EXPECT_GT(mean.rows, 0) << prompt << " " << batch;
  mean.prompt_ms /= mean.rows;
  mean.token_ms /= mean.rows;
  return mean;
}

// How far the default roofline is from a measured system: measured / roofline for the
// prefill of one prompt and for a decode iteration (contexts of the prompt plus half the
// 128 generated tokens). The figures are the ones docs/step-models.md quotes.
TEST(RooflineVsMeasured, SplitwiseLlama2_70bOnH100Tp4) {
  FP_REQUIRE_SHARED_DATA();
  RooflineInputs in = Inputs("atlas-70b", 4);
  in.memory.model = Llama2_70b();
  const auto model = Make(in);
  std::vector<double> prefill_ratio, decode_ratio;
  for (int64_t prompt : {512, 1024, 2048, 4096, 8192}) {
    const SplitwiseMean m = Splitwise(prompt, 1);
    const std::vector<StepChunk> step = {Prefill(prompt)};
    const double r = m.prompt_ms / model->Cost(step).gpu.millis();
    prefill_ratio.push_back(r);
    Show("prefill {:>5} tokens: measured {:7.1f} ms, roofline {:7.1f} ms, ratio {:.2f}", prompt,
         m.prompt_ms, model->Cost(step).gpu.millis(), r);
  }
  for (int64_t batch : {1, 2, 4, 8, 16, 32}) {
    const SplitwiseMean m = Splitwise(512, batch);
    const double roofline = model->Cost(Decodes(batch, 512 + 64)).gpu.millis();
    decode_ratio.push_back(m.token_ms / roofline);
    Show("decode batch {:>2}: measured {:5.1f} ms, roofline {:5.1f} ms, ratio {:.2f}", batch,
         m.token_ms, roofline, decode_ratio.back());
  }
  std::sort(prefill_ratio.begin(), prefill_ratio.end());
  std::sort(decode_ratio.begin(), decode_ratio.end());
  // The roofline is a lower bound: the measured engine is 1.83-2.23x slower on prefill and
  // 2.19-2.59x on decode (the figures printed above).
  EXPECT_GT(prefill_ratio.front(), 1.8);
  EXPECT_LT(prefill_ratio.back(), 2.3);
  EXPECT_GT(decode_ratio.front(), 2.1);
  EXPECT_LT(decode_ratio.back(), 2.7);
}

}  // namespace
}  // namespace fleetplan
