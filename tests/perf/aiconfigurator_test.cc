// The aiconfigurator step model: one step composed from measured GEMM, attention and MoE
// tables at one rank's shapes — by hand on a tiny table set, interpolation and
// extrapolation, located errors for shapes the tables lack, rows of the shared H100
// tables read back exactly, and roofline against the measured kernels on Atlas steps.
#include "fleetplan/perf/aiconfigurator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/perf/factory.h"
#include "fleetplan/perf/roofline.h"
#include "perf/perf_test_util.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

namespace fs = std::filesystem;
using perf_test::Decode;
using perf_test::Decodes;
using perf_test::Prefill;
using perf_test::Show;
using perf_test::Yaml;
using ::testing::HasSubstr;

constexpr const char* kGemmHeader = "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency";
constexpr const char* kAttentionHeader =
    "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,"
    "beam_width,attn_dtype,kv_cache_dtype,step,window_size,latency";
constexpr const char* kMoeHeader =
    "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,"
    "moe_tp_size,moe_ep_size,distribution,latency";

// A tiny model by hand: 2 layers, hidden 64, 4 heads / 2 KV heads of 16, FFN 128 (gated),
// vocab 256, one rank. GEMMs (n, k): qkv (128, 64), o (64, 64), gate_up (256, 64),
// down (64, 128), lm_head (256, 64).
AicModelShape Tiny() {
  AicModelShape s;
  s.model = "tiny";
  s.layers = 2;
  s.dense_layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 16;
  s.layer_gemms = {{"qkv_proj", 128, 64}, {"o_proj", 64, 64}};
  s.dense_gemms = {{"gate_up_proj", 256, 64}, {"down_proj", 64, 128}};
  s.lm_head = {"lm_head", 256, 64};
  s.attention = {{2, 0}};
  return s;
}

// The tables, with round numbers (microseconds; the files say milliseconds):
//   gemm       bf16, m in {1, 16}, n in {64, 128, 256}, k in {64, 128}:
//              m + n/64 + k/64  (affine, so every interpolation is exact)
//              plus fp8 rows that a bf16 model must skip
//   context    batch 1, isl in {1, 16, 32}: 10 + isl (heads 4/2/16, bf16, window 0);
//              rows of batch 2 and of 8 heads that must be skipped
//   generation batch in {1, 2}, step in {1, 15, 31}: 3 batch + (step + 1) / 16
//   moe        num_tokens in {1, 16}: 50 + 2 tokens (hidden 64, inter 32, top 2 of 4)
class AicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("aic_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::string gemm = std::string(kGemmHeader) + "\n";
    for (int m : {1, 16}) {
      for (int n : {64, 128, 256}) {
        for (int k : {64, 128}) {
          const double us = m + n / 64.0 + k / 64.0;
          gemm += fmt::format("VLLM,0.24.0,TEST GPU,gemm,linear,bfloat16,{},{},{},{}\n", m, n, k, us / 1000);
          gemm += fmt::format("VLLM,0.24.0,TEST GPU,gemm,cutlass,fp8,{},{},{},{}\n", m, n, k, us / 2000);
        }
      }
    }
    Write("gemm/vllm/0.24.0/gemm_perf.csv", gemm);
    std::string context = std::string(kAttentionHeader) + "\n";
    for (int isl : {1, 16, 32}) {
      context += fmt::format("VLLM,0.24.0,TEST GPU,context_attention,fa3,1,{},4,2,16,1,bfloat16,bfloat16,0,0,{}\n", isl,
                             (10 + isl) / 1000.0);
      context += fmt::format("VLLM,0.24.0,TEST GPU,context_attention,fa3,2,{},4,2,16,1,bfloat16,bfloat16,0,0,9\n", isl);
      context += fmt::format("VLLM,0.24.0,TEST GPU,context_attention,fa3,1,{},8,2,16,1,bfloat16,bfloat16,0,0,9\n", isl);
    }
    Write("attention/vllm/0.24.0/context_attention_perf.csv", context);
    std::string generation = std::string(kAttentionHeader) + "\n";
    for (int b : {1, 2}) {
      for (int step : {1, 15, 31}) {
        generation +=
            fmt::format("VLLM,0.24.0,TEST GPU,generation_attention,fa3,{},1,4,2,16,1,bfloat16,bfloat16,{},0,{}\n", b,
                        step, (3 * b + (step + 1) / 16.0) / 1000);
      }
    }
    Write("attention/vllm/0.24.0/generation_attention_perf.csv", generation);
    std::string moe = std::string(kMoeHeader) + "\n";
    for (int t : {1, 16}) {
      moe += fmt::format("VLLM,0.24.0,TEST GPU,moe,triton,bfloat16,{},64,32,2,4,1,1,balanced,{}\n", t,
                         (50 + 2 * t) / 1000.0);
    }
    Write("moe/vllm/0.24.0/moe_perf.csv", moe);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  AicSource Source() const { return AicSource{dir_.string()}; }
  AicStepModel Model(const AicModelShape& shape = Tiny()) const {
    auto k = AicKernels::Load(Source(), shape);
    EXPECT_TRUE(k.ok()) << k.status().message();
    return AicStepModel(std::move(k).value(), shape, ParallelComm());
  }
  std::string LoadError(const AicModelShape& shape) const {
    auto k = AicKernels::Load(Source(), shape);
    EXPECT_FALSE(k.ok());
    return k.ok() ? "" : k.status().message();
  }
  fs::path dir_;
};

TEST_F(AicTest, OneDecodeIsTheSumOfItsKernels) {
  // T = 1, S = 1. qkv 1+2+1 = 4, o 1+1+1 = 3, gate_up 1+4+1 = 6, down 1+1+2 = 4: 17 per
  // layer; generation (1, 15) = 3 + 1 = 4; lm_head 1+4+1 = 6.  2 × (17 + 4) + 6 = 48 us.
  const StepCost c = Model().Cost(std::vector<StepChunk>{Decode(15)});
  EXPECT_EQ(c.gpu, Us(48));
  EXPECT_EQ(c.collectives, Duration());
  EXPECT_FALSE(c.extrapolated);
}

TEST_F(AicTest, APrefillChunkPaysItsShareOfTheQueryKeyPairs) {
  // 16 tokens, no context: GEMMs at m 16: qkv 19 + o 18 + gate_up 21 + down 19 = 77;
  // context attention (isl 16) 26; lm_head (1 sequence) 6.  2 × (77 + 26) + 6 = 212 us.
  EXPECT_EQ(Model().Cost(std::vector<StepChunk>{Prefill(16)}).gpu, Us(212));
  // The same 16 tokens after 16 in KV: the prompt of 32 costs 42 us, of which the chunk
  // pays pairs(16, 16) / pairs(0, 32) = (17 + ... + 32) / (1 + ... + 32) = 392 / 528.
  // 2 × (77 + 42,000 ns × 392 / 528) + 6,000 = 222,363.6 ns.
  const StepCost c = Model().Cost(std::vector<StepChunk>{Prefill(16, 16)});
  EXPECT_EQ(c.gpu, Ns(222364));
  EXPECT_FALSE(c.extrapolated);
}

TEST_F(AicTest, AMixedStepAddsEveryTerm) {
  // Two decodes (context 15 and 31, mean 23) and a prefill chunk of 14: T = 16, S = 3.
  // GEMMs 77 per layer; context (isl 14) 24; generation (2, 23) = 6 + 24/16 = 7.5;
  // lm_head at m 3 = 3 + 4 + 1 = 8.  2 × (77 + 24 + 7.5) + 8 = 225 us.
  const AicStepModel model = Model();
  const std::vector<StepChunk> step = {Decode(15), Decode(31), Prefill(14)};
  const StepCost c = model.Cost(step);
  EXPECT_EQ(c.gpu, Us(225));
  const AicBreakdown b = model.Explain(step);
  EXPECT_EQ(b.tokens, 16);
  EXPECT_EQ(b.sequences, 3);
  EXPECT_EQ(b.decodes, 2);
  EXPECT_DOUBLE_EQ(b.mean_context, 23);
  EXPECT_DOUBLE_EQ(b.layer_gemms_ns, 2 * 37000.0);
  EXPECT_DOUBLE_EQ(b.ffn_ns, 2 * 40000.0);
  EXPECT_DOUBLE_EQ(b.context_attention_ns, 2 * 24000.0);
  EXPECT_DOUBLE_EQ(b.generation_attention_ns, 2 * 7500.0);
  EXPECT_DOUBLE_EQ(b.lm_head_ns, 8000);
  EXPECT_EQ(b.total, c.gpu);
}

TEST_F(AicTest, PaddingDecodesCountAsDecodes) {
  // One real decode at 15 padded to two (the padding at context 15): as two decodes.
  const AicStepModel model = Model();
  EXPECT_EQ(model.CostPadded(std::vector<StepChunk>{Decode(15)}, StepPadding{1, 15}).gpu,
            model.Cost(Decodes(2, 15)).gpu);
}

TEST_F(AicTest, GridPointsAreTheMeasuredValuesAndBetweenThemLinear) {
  const AicKernels k = AicKernels::Load(Source(), Tiny()).value();
  bool outside = false;
  // At grid points: gate_up (256, 64) at m 1 and 16 is the row's value.
  EXPECT_DOUBLE_EQ(k.dense_gemms[0].Value(1, &outside), 6000);
  EXPECT_DOUBLE_EQ(k.dense_gemms[0].Value(16, &outside), 21000);
  // Between m points: m 7 of 1..16 is 6 + 6 = 12 us.
  EXPECT_DOUBLE_EQ(k.dense_gemms[0].Value(7, &outside), 12000);
  // Between generation points: batch 2, step 23 of 15..31: 7 + 0.5.
  EXPECT_DOUBLE_EQ(k.attention[0].generation.Value(2, 23, &outside), 7500);
  // Context attention between isl 16 and 32: 10 + 24.
  EXPECT_DOUBLE_EQ(k.attention[0].context.Value(24, &outside), 34000);
  EXPECT_FALSE(outside);
  // A GEMM between measured (n, k) pairs: n 192 of 128..256, k 96 of 64..128, folded
  // into one curve over m at load: m + 3 + 1.5.
  AicModelShape odd = Tiny();
  odd.dense_gemms[0] = {"gate_up_proj", 192, 96};
  const AicKernels between = AicKernels::Load(Source(), odd).value();
  EXPECT_EQ(between.dense_gemms[0].n_lo, 128);
  EXPECT_EQ(between.dense_gemms[0].n_hi, 256);
  EXPECT_EQ(between.dense_gemms[0].k_lo, 64);
  EXPECT_EQ(between.dense_gemms[0].k_hi, 128);
  EXPECT_DOUBLE_EQ(between.dense_gemms[0].Value(1, &outside), 5500);
  EXPECT_DOUBLE_EQ(between.dense_gemms[0].Value(10, &outside), 14500);
  EXPECT_FALSE(outside);
}

TEST_F(AicTest, BeyondTheTablesTheEdgeSlopeContinuesAndTheStepIsFlagged) {
  const AicStepModel model = Model();
  // A decode at context 63 (steps measured to 31): generation (1, 63) = 3 + 64/16 = 7.
  const StepCost decode = model.Cost(std::vector<StepChunk>{Decode(63)});
  EXPECT_EQ(decode.gpu, Us(2 * (17 + 7) + 6));
  EXPECT_TRUE(decode.extrapolated);
  // 32 tokens (m measured to 16): GEMMs 32 + ... = 2 × (35 + 34 + 37 + 35) per layer pair;
  // a 32-token prompt is measured (42 us).  2 × (141 + 42) + 6 = 372 us.
  const StepCost wide = model.Cost(std::vector<StepChunk>{Prefill(32)});
  EXPECT_EQ(wide.gpu, Us(372));
  EXPECT_TRUE(wide.extrapolated);
  // A 64-token prompt is beyond the longest measured (32): 42 us grown with the pairs,
  // 42 × (64·65/2) / (32·33/2) = 165.4545 us per layer, also flagged.
  bool outside = false;
  EXPECT_DOUBLE_EQ(model.kernels().attention[0].PrefillChunk(0, 64, &outside), 42000.0 * 2080 / 528);
  EXPECT_TRUE(outside);
  // A GEMM beyond the measured n flags every step that uses it.
  AicModelShape wide_head = Tiny();
  wide_head.lm_head = {"lm_head", 512, 64};
  const StepCost head = Model(wide_head).Cost(std::vector<StepChunk>{Decode(15)});
  EXPECT_TRUE(head.extrapolated);
  EXPECT_EQ(head.gpu, Us(48 + 4));  // lm_head 1 + 512/64 + 1 = 10 instead of 6
}

TEST_F(AicTest, ASlidingWindowGroupCountsOnlyTheWindowsPairs) {
  // Window 8: a 16-token prompt has pairs 1+...+8 + 8·8 = 100; a chunk of 8 after 8 has 64.
  AicAttentionTables a;
  a.group = {1, 8};
  a.context.xs = {1, 16, 32};
  a.context.ns = {11000, 26000, 42000};
  bool outside = false;
  EXPECT_DOUBLE_EQ(a.PrefillChunk(8, 8, &outside), 26000.0 * 64 / 100);
  EXPECT_DOUBLE_EQ(a.PrefillChunk(0, 16, &outside), 26000.0);
  EXPECT_FALSE(outside);
}

TEST_F(AicTest, MoeLayersReadTheirTableAtTheStepsTokens) {
  AicModelShape moe = Tiny();
  moe.dense_layers = 0;
  moe.moe_layers = 2;
  moe.dense_gemms.clear();
  moe.moe_gemms = {{"router", 64, 64}};  // n 64 stands in for the experts (grid floor)
  moe.experts = 4;
  moe.experts_per_token = 2;
  moe.expert_intermediate = 32;
  // One decode at 15: qkv 4 + o 3 + moe (1 token) 52 + router 1+1+1 = 3, generation 4,
  // lm_head 6.  2 × (7 + 52 + 3 + 4) + 6 = 138 us.
  EXPECT_EQ(Model(moe).Cost(std::vector<StepChunk>{Decode(15)}).gpu, Us(138));
}

TEST_F(AicTest, AMissingAttentionShapeNamesItAndTheNearestPresent) {
  AicModelShape s = Tiny();
  s.heads = 5;
  EXPECT_EQ(LoadError(s),
            (dir_ / "attention/vllm/0.24.0/context_attention_perf.csv").string() +
                ": no context attention (batch_size 1) rows for num_heads 5, num_key_value_heads 2, head_dim 16, "
                "kv_cache_dtype bfloat16, window_size 0 (2 layers of tiny); nearest shapes present: (num_heads 4, "
                "num_key_value_heads 2, head_dim 16, kv_cache_dtype bfloat16, window_size 0); (num_heads 8, "
                "num_key_value_heads 2, head_dim 16, kv_cache_dtype bfloat16, window_size 0)");
}

TEST_F(AicTest, AMissingMoeShapeNamesItAndTheNearestPresent) {
  AicModelShape s = Tiny();
  s.moe_layers = 2;
  s.dense_layers = 0;
  s.experts = 8;
  s.experts_per_token = 2;
  s.expert_intermediate = 32;
  EXPECT_EQ(LoadError(s), (dir_ / "moe/vllm/0.24.0/moe_perf.csv").string() +
                              ": no MoE rows for moe_dtype bfloat16, hidden_size 64, inter_size 32, topk 2, "
                              "num_experts 8, moe_tp_size 1, moe_ep_size 1, distribution balanced (2 MoE layers of "
                              "tiny); nearest shapes present: (moe_dtype bfloat16, hidden_size 64, inter_size 32, "
                              "topk 2, num_experts 4, moe_tp_size 1, moe_ep_size 1, distribution balanced)");
}

TEST_F(AicTest, AMissingGemmPairOrDtypeIsNamed) {
  // Drop the (256, 128) pair: gate_up of (200, 100) needs it as a corner.
  std::string gemm = std::string(kGemmHeader) + "\n";
  for (int m : {1, 16}) {
    for (int n : {64, 128, 256}) {
      for (int k : {64, 128}) {
        if (n == 256 && k == 128) continue;
        gemm += fmt::format("VLLM,0.24.0,TEST GPU,gemm,linear,bfloat16,{},{},{},0.001\n", m, n, k);
      }
    }
  }
  Write("gemm/vllm/0.24.0/gemm_perf.csv", gemm);
  AicModelShape s = Tiny();
  s.dense_gemms[0] = {"gate_up_proj", 200, 100};
  EXPECT_EQ(LoadError(s), (dir_ / "gemm/vllm/0.24.0/gemm_perf.csv").string() +
                              ": no gemm rows for gemm_dtype bfloat16, n 256, k 128, a measured pair around "
                              "gate_up_proj (n 200, k 100) of tiny; nearest pairs present: (n 128, k 128); "
                              "(n 256, k 64); (n 128, k 64)");
  s = Tiny();
  s.gemm_dtype = "fp8_block";
  EXPECT_EQ(LoadError(s), (dir_ / "gemm/vllm/0.24.0/gemm_perf.csv").string() +
                              ": no rows of gemm_dtype fp8_block (the weight format of tiny); present: bfloat16");
}

TEST_F(AicTest, AMalformedRowIsLocated) {
  Write("attention/vllm/0.24.0/generation_attention_perf.csv",
        std::string(kAttentionHeader) +
            "\nVLLM,0.24.0,TEST GPU,generation_attention,fa3,1,1,4,2,16,1,bfloat16,"
            "bfloat16,abc,0,0.001\n");
  EXPECT_THAT(LoadError(Tiny()), HasSubstr("generation_attention_perf.csv:2:"));
  EXPECT_THAT(LoadError(Tiny()), HasSubstr("step: expected a number in [0, 1099511627776], got 'abc'"));
}

TEST_F(AicTest, TheFactoryLocatesErrorsAtTheStepModel) {
  StepModelContext ctx;
  ctx.memory.model = Catalog::Builtin().Model("atlas-70b").value();
  ctx.memory.layout = Parallelism{1, 1, 1};
  ctx.scenario_dir = dir_.string();
  const YamlDocument doc = Yaml("step_model: {kind: aiconfigurator, dir: .}\n");
  auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
  ASSERT_FALSE(m.ok());
  // Atlas at TP 1 has 64 query heads, 8 KV heads of 128: not in the tiny tables.
  EXPECT_THAT(m.status().message(), HasSubstr("scenario.yaml:1:41: step_model.dir: "));
  EXPECT_THAT(m.status().message(), HasSubstr("no context attention (batch_size 1) rows for num_heads 64, "
                                              "num_key_value_heads 8, head_dim 128"));
  // MLA has no rows at all: said before any table is read.
  ctx.memory.model = Catalog::Builtin().Model("deepseek-v3").value();
  auto mla = MakeStepCostModel(doc.root()["step_model"], ctx);
  ASSERT_FALSE(mla.ok());
  EXPECT_THAT(mla.status().message(), HasSubstr("uses multi-head latent attention"));
}

// The kernels the tables do not time, by hand on Tiny (2 dense layers, hidden 64, 4 / 2
// heads of 16, FFN 64 per rank, vocab 256, bf16 KV) with a 2 us floor and 1 byte per ns.
TEST_F(AicTest, OtherKernelsAreLaunchBoundAtADecodeAndStreamBytesAtALongPrefill) {
  AicModelShape shape = Tiny();
  shape.ffn_per_rank = 64;
  shape.vocab = 256;
  shape.kv_bytes = 2;
  auto k = AicKernels::Load(Source(), shape);
  ASSERT_TRUE(k.ok()) << k.status().message();
  // The floor comes from the table: the shortest bf16 GEMM is m 1, n 64, k 64: 1 + 1 + 1 us.
  EXPECT_DOUBLE_EQ(k->shortest_gemm_ns, 3000);
  AicOtherKernels other;
  other.enabled = true;
  other.floor_ns = 2000;
  other.bytes_per_ns = 1;
  const AicStepModel with(*k, shape, ParallelComm(), other);
  const AicStepModel without(*k, shape, ParallelComm());
  // One decode: every kernel is below the floor except the sampler's logits
  // (2 passes x 1 x 256 x 4 B = 2048 ns): 2 layers x 5 kernels + embedding + final norm
  // + 10 sampler kernels = 22 floors.
  const AicBreakdown one = with.Explain(std::vector<StepChunk>{Decode(15)});
  EXPECT_DOUBLE_EQ(one.other_kernels_ns, 22 * 2000 + 2048);
  EXPECT_EQ(one.total - without.Explain(std::vector<StepChunk>{Decode(15)}).total, Duration::Nanos(22 * 2000 + 2048));
  // A 1,000-token prefill: bytes win. Per layer: norms 2 x 4 x 1000 x 128, rotary
  // 2 x 1000 x 6 x 16 x 2, KV write 2 x 1000 x 2 x 2 x 16 x 2, activation 3 x 1000 x 64 x 2;
  // per step: embedding 2 x 1000 x 128, final norm 3 x 1000 x 128, 10 floors, logits 2048.
  const double per_layer = 2 * 4 * 1000 * 128.0 + 2 * 1000 * 6 * 16 * 2.0 + 2 * 1000 * 2 * 2 * 16 * 2.0 +
                           3 * 1000 * 64 * 2.0;
  const double per_step = 2 * 1000 * 128.0 + 3 * 1000 * 128.0 + 10 * 2000 + 2048;
  EXPECT_DOUBLE_EQ(with.Explain(std::vector<StepChunk>{Prefill(1000)}).other_kernels_ns, 2 * per_layer + per_step);
  EXPECT_DOUBLE_EQ(without.Explain(std::vector<StepChunk>{Prefill(1000)}).other_kernels_ns, 0);
}

TEST_F(AicTest, LoadingTwiceGivesTheSameCostsAndDescription) {
  const AicStepModel a = Model();
  const AicStepModel b = Model();
  for (int64_t n = 1; n <= 40; ++n) {
    std::vector<StepChunk> step = Decodes(n % 3, 7 * n);
    step.push_back(Prefill(n, n % 5 == 0 ? 0 : 3 * n));
    EXPECT_EQ(a.Cost(step).gpu, b.Cost(step).gpu);
  }
  EXPECT_EQ(a.Describe().dump(), b.Describe().dump());
}

TEST(AicShape, AtlasAtTp4) {
  const auto s =
      AicShapeOf(Catalog::Builtin().Model("atlas-70b").value(), Parallelism{4, 1, 1}, DType::kBf16, DType::kBf16);
  ASSERT_TRUE(s.ok()) << s.status().message();
  // qkv n = (64 + 2 × 8) × 128 / 4; o k = 64 × 128 / 4; gate_up n = 2 × 28672 / 4;
  // lm_head n = 128256 / 4.
  ASSERT_EQ(s->layer_gemms.size(), 2u);
  EXPECT_EQ(s->layer_gemms[0].n, 2560);
  EXPECT_EQ(s->layer_gemms[0].k, 8192);
  EXPECT_EQ(s->layer_gemms[1].n, 8192);
  EXPECT_EQ(s->layer_gemms[1].k, 2048);
  ASSERT_EQ(s->dense_gemms.size(), 2u);
  EXPECT_EQ(s->dense_gemms[0].n, 14336);
  EXPECT_EQ(s->dense_gemms[1].k, 7168);
  EXPECT_EQ(s->lm_head.n, 32064);
  EXPECT_EQ(s->heads, 16);
  EXPECT_EQ(s->kv_heads, 2);
  EXPECT_EQ(s->attention.size(), 1u);
  EXPECT_EQ(s->dense_layers, 80);
  // fp4 weights have no rows; fp8 reads the fp8 GEMMs.
  EXPECT_FALSE(
      AicShapeOf(Catalog::Builtin().Model("atlas-70b").value(), Parallelism{4, 1, 1}, DType::kFp4, DType::kBf16).ok());
  EXPECT_EQ(AicShapeOf(Catalog::Builtin().Model("atlas-70b").value(), Parallelism{4, 1, 1}, DType::kFp8, DType::kFp8)
                ->kv_dtype,
            "fp8");
}

// ---- the shared H100 tables ------------------------------------------------------

StepModelContext AtlasContext() {
  const Catalog& c = Catalog::Builtin();
  StepModelContext ctx;
  ctx.memory.model = c.Model("atlas-70b").value();
  ctx.memory.gpu = c.Gpu("h100-sxm-80g").value();
  ctx.memory.layout = Parallelism{4, 1, 1};
  ctx.memory.max_running = 256;
  ctx.tp_link = c.Link("nvlink4").value();
  ctx.pp_link = c.Link("ib-ndr-400").value();
  return ctx;
}

std::unique_ptr<StepCostModel> Build(std::string_view yaml, const StepModelContext& ctx) {
  const YamlDocument doc = Yaml(yaml);
  auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.status().message());
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(AicShared, OneRowOfEachH100TableReadsBackExactly) {
  FP_REQUIRE_SHARED_DATA();
  const AicSource h100{testing::SharedPath("profiles/aiconfigurator/h100_sxm")};
  const AicModelShape atlas =
      AicShapeOf(Catalog::Builtin().Model("atlas-70b").value(), Parallelism{4, 1, 1}, DType::kBf16, DType::kBf16)
          .value();
  auto k = AicKernels::Load(h100, atlas);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->device, "NVIDIA H100 80GB HBM3");
  bool outside = false;
  // gemm_perf: bfloat16, m 1, n 8192, k 2048 (o_proj at TP 4): 0.013882666826248169 ms.
  EXPECT_DOUBLE_EQ(k->layer_gemms[1].Value(1, &outside), 0.013882666826248169 * 1e6);
  // context_attention_perf: batch 1, isl 2048, 16 / 2 heads of 128, bf16: 0.045850664377212524 ms.
  EXPECT_DOUBLE_EQ(k->attention[0].context.Value(2048, &outside), 0.045850664377212524 * 1e6);
  // generation_attention_perf: batch 64, step 2047, same heads: 0.0573226660490036 ms.
  EXPECT_DOUBLE_EQ(k->attention[0].generation.Value(64, 2047, &outside), 0.0573226660490036 * 1e6);
  EXPECT_FALSE(outside);

  // moe_perf: bfloat16, 64 tokens, hidden 2048, inter 768, top 8 of 128, tp 1, ep 1,
  // balanced (Qwen3-30B-A3B on one GPU): 0.43194135030110675 ms.
  const AicModelShape qwen =
      AicShapeOf(Catalog::Builtin().Model("qwen3-30b-a3b").value(), Parallelism{1, 1, 1}, DType::kBf16, DType::kBf16)
          .value();
  auto q = AicKernels::Load(h100, qwen);
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_TRUE(q->has_moe);
  EXPECT_DOUBLE_EQ(q->moe.Value(64, &outside), 0.43194135030110675 * 1e6);
  EXPECT_FALSE(outside);
}

// Without `dir` the model reads the tables that ship for the scenario's GPU: the same
// tables as the public data, so the same costs.
TEST(AicShared, TheShippedTablesCostStepsAsThePublicOnesDo) {
  FP_REQUIRE_SHARED_DATA();
  const std::string dir = testing::SharedPath("profiles/aiconfigurator/h100_sxm");
  const auto shipped = Build("step_model: {kind: aiconfigurator}\n", AtlasContext());
  const auto shared = Build("step_model: {kind: aiconfigurator, dir: " + dir + "}\n", AtlasContext());
  ASSERT_NE(shipped, nullptr);
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shipped->Describe()["dir"], "builtin:aiconfigurator/h100_sxm");
  for (const auto& chunks : {Decodes(1, 2047), Decodes(64, 4000), std::vector<StepChunk>{Prefill(3000)}}) {
    EXPECT_EQ(shipped->Cost(chunks).gpu, shared->Cost(chunks).gpu);
  }
}

TEST(AicFactory, WithoutDirAGpuWithNoShippedTablesIsAnError) {
  StepModelContext ctx = AtlasContext();
  ctx.memory.gpu = Catalog::Builtin().Gpu("a100-80g").value();
  const YamlDocument doc = Yaml("step_model: {kind: aiconfigurator}\n");
  auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("no kernel tables ship for GPU 'a100-80g'"));
}

TEST(AicFactory, OtherKernelsCanBeLeftOut) {
  const auto with = Build("step_model: {kind: aiconfigurator}\n", AtlasContext());
  const auto without = Build("step_model: {kind: aiconfigurator, other_kernels: false}\n", AtlasContext());
  ASSERT_NE(with, nullptr);
  ASSERT_NE(without, nullptr);
  EXPECT_EQ(without->Describe()["other_kernels"], "none");
  EXPECT_DOUBLE_EQ(with->Describe()["other_kernels"]["floor_us"].get<double>(),
                   dynamic_cast<const AicStepModel&>(*with).kernels().shortest_gemm_ns / 1e3);
  // Atlas at TP 4, 8 decodes: launch-bound, 80 layers x 5 + 12 per step floors of the
  // H100 table's shortest bf16 GEMM plus the sampler's logits pass.
  const auto& aic = dynamic_cast<const AicStepModel&>(*with);
  const double floor = aic.kernels().shortest_gemm_ns;
  const double logits = 2.0 * 8 * 128256 * 4 / (3350e9 * kOtherKernelMemoryEfficiency / 1e9);
  EXPECT_NEAR(aic.Explain(Decodes(8, 2000)).other_kernels_ns, (80 * 5 + 12) * floor + logits, 1.0);
  EXPECT_GT(with->Cost(Decodes(8, 2000)).gpu, without->Cost(Decodes(8, 2000)).gpu);
}

TEST(DefaultStepModel, MeasuredKernelsWhereTheyShipAndCoverTheModelElseRoofline) {
  StepModelContext ctx = AtlasContext();
  EXPECT_EQ(DefaultStepModel(ctx).yaml, "{kind: aiconfigurator}");
  EXPECT_THAT(DefaultStepModel(ctx).reason, HasSubstr("builtin:aiconfigurator/h100_sxm"));
  ctx.memory.gpu = Catalog::Builtin().Gpu("h200-141g").value();
  EXPECT_EQ(DefaultStepModel(ctx).yaml, "{kind: aiconfigurator}");
  ctx.memory.gpu = Catalog::Builtin().Gpu("a100-80g").value();
  EXPECT_EQ(DefaultStepModel(ctx).yaml, "{kind: roofline}");
  EXPECT_EQ(DefaultStepModel(ctx).reason, "roofline: no measured kernel tables ship for a100-80g");
  ctx.memory.gpu = Catalog::Builtin().Gpu("h100-sxm-80g").value();
  ctx.memory.weight_dtype = DType::kInt4;
  EXPECT_EQ(DefaultStepModel(ctx).yaml, "{kind: roofline}");
  EXPECT_THAT(DefaultStepModel(ctx).reason, HasSubstr("do not cover this model"));
  const auto built = MakeDefaultStepCostModel(ctx);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ((*built)->kind(), "roofline");
}

TEST(AicShared, CollectivesDefaultToTheMeasuredTablesBesideTheKernels) {
  FP_REQUIRE_SHARED_DATA();
  const std::string dir = testing::SharedPath("profiles/aiconfigurator/h100_sxm");
  const auto model = Build("step_model: {kind: aiconfigurator, dir: " + dir + "}\n", AtlasContext());
  ASSERT_NE(model, nullptr);
  const Json d = model->Describe();
  EXPECT_EQ(d["parallel_comm"]["source"]["paths"], Json::array({(fs::path(dir).lexically_normal() / "comm").string()}));
  EXPECT_EQ(d["device"], "NVIDIA H100 80GB HBM3");
  const auto alpha =
      Build("step_model: {kind: aiconfigurator, dir: " + dir + ", collectives: alpha-beta}\n", AtlasContext());
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->Describe()["parallel_comm"]["source"], kAlphaBetaCollectives);
}

// Roofline against the measured kernels on the same Atlas steps (atlas-70b, H100 SXM, TP 4,
// bf16): the table of docs/step-models.md "Roofline against measured kernels".
TEST(AicShared, AtlasStepsRooflineAgainstMeasuredKernels) {
  FP_REQUIRE_SHARED_DATA();
  const StepModelContext ctx = AtlasContext();
  const auto roofline = Build("step_model: {kind: roofline}\n", ctx);
  const std::string dir = testing::SharedPath("profiles/aiconfigurator/h100_sxm");
  const auto measured = Build("step_model: {kind: aiconfigurator, dir: " + dir + "}\n", ctx);
  ASSERT_NE(roofline, nullptr);
  ASSERT_NE(measured, nullptr);
  const auto& aic = dynamic_cast<const AicStepModel&>(*measured);
  struct Case {
    std::string name;
    std::vector<StepChunk> chunks;
    bool beyond_tables;  // generation attention is measured to batch 256 x 2047 only
  };
  std::vector<Case> cases;
  // KV history 2047 and 8191 tokens (2k and 8k with the token decoded): grid points.
  for (int64_t context : {2047, 8191}) {
    for (int64_t batch : {1, 16, 64, 256}) {
      cases.push_back({fmt::format("{} decodes at context {}", batch, context), Decodes(batch, context),
                       batch == 256 && context > 2047});
    }
  }
  for (int64_t chunk : {512, 2048, 8192}) {
    cases.push_back({fmt::format("prefill chunk of {}", chunk), {Prefill(chunk)}, false});
  }
  const auto& rl = dynamic_cast<const RooflineStepModel&>(*roofline);
  Show(
      "| step | roofline ms | measured ms | measured / roofline | roofline: linear / attention / all-reduce | "
      "measured: GEMMs incl. lm_head / attention / all-reduce |");
  Show("| --- | --- | --- | --- | --- | --- |");
  for (const Case& c : cases) {
    const StepCost r = roofline->Cost(c.chunks);
    const StepCost m = measured->Cost(c.chunks);
    const AicBreakdown b = aic.Explain(c.chunks);
    EXPECT_EQ(b.total, m.gpu) << c.name;
    EXPECT_EQ(m.extrapolated, c.beyond_tables) << c.name;
    const RooflineBreakdown rb = rl.Explain(c.chunks);
    EXPECT_EQ(rb.total, r.gpu) << c.name;
    Show("| {} | {:.3f} | {:.3f}{} | {:.2f} | {:.3f} / {:.3f} / {:.3f} | {:.3f} / {:.3f} / {:.3f} |", c.name,
         r.gpu.millis(), m.gpu.millis(), m.extrapolated ? " (extrapolated)" : "", m.gpu.millis() / r.gpu.millis(),
         rb.linear.millis(), rb.attention.millis(), rb.collectives.millis(),
         (b.layer_gemms_ns + b.ffn_ns + b.lm_head_ns) / 1e6, (b.context_attention_ns + b.generation_attention_ns) / 1e6,
         b.collectives.millis());
  }
}

}  // namespace
}  // namespace fleetplan
