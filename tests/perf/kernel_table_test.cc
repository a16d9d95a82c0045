// The kernel-table step model: composition of one step from per-layer tables, linear
// interpolation, extrapolation flags, load errors, and the shared LLMServingSim profiles.
#include "fleetplan/perf/kernel_table.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/perf/factory.h"
#include "perf/perf_test_util.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

using perf_test::Decode;
using perf_test::Decodes;
using perf_test::Prefill;
using ::testing::HasSubstr;

KernelModelShape Shape(int64_t layers, int64_t experts = 0, int64_t top_k = 0, int64_t ep = 1) {
  KernelModelShape s;
  s.layers = layers;
  s.experts = experts;
  s.experts_per_token = top_k;
  s.ep = ep;
  s.hidden = 2048;
  s.ep_link = LinkCost{16e9, Us(20)};
  return s;
}

// A tiny profile with round numbers (microseconds):
//   per step   embedding 1 + final_layernorm 1                    = 2 at any token count
//   per layer  qkv_proj 10 at 1 token, 30 at 3 tokens (+ act 0)    linear: 10 + 10 * (T - 1)
//   per seq    lm_head 100 + sampler 10 at 1 seq, 200 + 20 at 3
//   attention  prefill (16, 0) 5, (16, 16) 7, (32, 0) 9, (32, 16) 11
//              decode  (1, 16) 3, (1, 32) 4, (2, 16) 5, (2, 32) 6
class KernelTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kernel_table_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
    Write("dense.csv",
          "layer,tokens,time_us\nembedding,1,1\nembedding,3,1\nfinal_layernorm,1,1\nfinal_layernorm,3,1\n"
          "qkv_proj,1,10\nqkv_proj,3,30\nact_fn,1,0\nact_fn,3,0\n");
    Write("per_sequence.csv", "layer,sequences,time_us\nlm_head,1,100\nlm_head,3,200\nsampler,1,10\nsampler,3,20\n");
    Write("attention.csv",
          "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n16,0,0,0,5\n16,16,0,0,7\n32,0,0,0,9\n32,16,0,0,11\n"
          "0,0,1,16,3\n0,0,1,32,4\n0,0,2,16,5\n0,0,2,32,6\n16,0,1,16,99\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  KernelTableStepModel Model(int64_t layers = 2) const {
    auto t = KernelTables::Load(dir_.string(), 1);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return KernelTableStepModel(std::move(t).value(), Shape(layers));
  }
  std::filesystem::path dir_;
};

TEST_F(KernelTableTest, OneDecodeIsTheSumOfItsKernels) {
  // 2 + 2 layers * (10 + 3) + 110 = 138 us.
  const StepCost c = Model().Cost(std::vector<StepChunk>{Decode(16)});
  EXPECT_EQ(c.gpu, Us(138));
  EXPECT_FALSE(c.extrapolated);
}

TEST_F(KernelTableTest, InterpolatesLinearlyOnEveryAxis) {
  // Two decodes at KV 16 and 32 (mean 24, skew alpha 0): tokens 2 -> layer 20; attention
  // (2, 24) = 5.5; sequences 2 -> 165.  2 + 2 * 25.5 + 165 = 218 us.
  const StepCost c = Model().Cost(std::vector<StepChunk>{Decode(16), Decode(32)});
  EXPECT_EQ(c.gpu, Us(218));
  EXPECT_FALSE(c.extrapolated);
}

TEST_F(KernelTableTest, PrefillChunksAddTheirOwnAttention) {
  // Chunks of 1 token are below the prefill grid (16): the first point's value is used.
  // One chunk (new 1, ctx 8): attention (16, 8) row 16 at kv 8 = 6; layer 10; seqs 1 -> 110.
  const StepCost c = Model().Cost(std::vector<StepChunk>{Prefill(1, 8)});
  EXPECT_EQ(c.gpu, Us(2 + 2 * 16 + 110));
  EXPECT_FALSE(c.extrapolated);
}

TEST_F(KernelTableTest, BeyondTheLastPointContinuesTheSlopeAndSaysSo) {
  // Four decodes at KV 16: tokens 4 -> layer 40 (slope 10 past 3); attention n = 4 past
  // the last row: 3 + (4 - 1) * 2 = 9; sequences 4 -> 110 + 3 * 55 = 275.
  const StepCost c = Model().Cost(Decodes(4, 16));
  EXPECT_EQ(c.gpu, Us(2 + 2 * (40 + 9) + 275));
  EXPECT_TRUE(c.extrapolated);
}

TEST_F(KernelTableTest, PaddingCostsLikeRealDecodes) {
  const KernelTableStepModel m = Model();
  const std::vector<StepChunk> one{Decode(16)};
  EXPECT_EQ(m.CostPadded(one, StepPadding{1, 16}).gpu, m.Cost(Decodes(2, 16)).gpu);
}

TEST_F(KernelTableTest, ExpertParallelPaysTheExchangePerMoeLayer) {
  Write("moe.csv", "tokens,activated_experts,time_us\n1,8,50\n4,8,60\n4,16,70\n");
  auto t = KernelTables::Load(dir_.string(), 1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  KernelModelShape shape = Shape(2, 16, 8, 2);
  shape.hidden = 1024;
  shape.ep_link = LinkCost{1e9, Us(1)};
  const KernelTableStepModel m(std::move(t).value(), shape);
  const StepCost c = m.Cost(Decodes(2, 16));
  // 2 tokens from each of 2 ranks, 1024 bf16 values each: 8 KiB gathered; per layer an
  // all-gather and a reduce-scatter, each 1 us + 4096 B / 1e9 B/s = 5.096 us.
  const Duration exchange = AllGatherTime(2, Bytes(8192), shape.ep_link) + ReduceScatterTime(2, Bytes(8192), shape.ep_link);
  EXPECT_EQ(exchange, Ns(10192));
  EXPECT_EQ(c.collectives, exchange * 2);
  // The MoE kernel at 2 tokens: local experts 8 * (1 - (1/2)^4) = 7.5, below the grid -> 8;
  // between rows 1 (50) and 4 (60) at 2 tokens: 53.33 us per layer. Two decodes at KV 16
  // otherwise cost 2 + 2 * (20 + 5) + 165 = 217 us.
  const double moe_ns = 50'000 + (60'000 - 50'000) / 3.0;
  EXPECT_EQ(c.gpu, Us(217) + Duration::Nanos(std::llround(2 * moe_ns)) + c.collectives);
}

// ---- tensor- and pipeline-parallel communication -----------------------------------

ParallelLinks TpLinks(int64_t tp, bool peer_to_peer = true) {
  ParallelLinks l;
  l.tp = tp;
  l.tp_link = LinkCost{16e9, Us(20)};
  l.peer_to_peer = peer_to_peer;
  return l;
}

TEST_F(KernelTableTest, TensorParallelAddsTwoAllReducesPerLayerAlphaBeta) {
  auto t = KernelTables::Load(dir_.string(), 2);
  ASSERT_TRUE(t.ok()) << t.status().message();
  KernelModelShape shape = Shape(2);  // hidden 2048
  shape.comm = ParallelComm(TpLinks(2), nullptr);
  const KernelTableStepModel m(std::move(t).value(), shape);
  const StepCost c = m.Cost(std::vector<StepChunk>{Decode(16)});
  // One token: 1 x 2048 x 2 B = 4096 B per all-reduce; two P2P GPUs take vLLM's custom
  // kernel, one stage: 20 us + 4096 B / 16 GB/s = 20.256 us; 2 per layer x 2 layers.
  EXPECT_EQ(c.collectives, Ns(4 * 20'256));
  // The tables' compute (138 us, OneDecodeIsTheSumOfItsKernels) plus the all-reduces.
  EXPECT_EQ(c.gpu, Us(138) + Ns(4 * 20'256));
  EXPECT_FALSE(c.extrapolated);
}

TEST_F(KernelTableTest, TensorParallelAllReducesFromTheVllmTable) {
  Write("comm.csv",
        "framework,version,device,op_name,kernel_source,allreduce_dtype,num_gpus,message_size,latency,backend\n"
        "vLLM,0.24.0,GPU,all_reduce,vLLM_custom_graph,bfloat16,2,1024,0.004,vllm_graph\n"
        "vLLM,0.24.0,GPU,all_reduce,vLLM_custom_graph,bfloat16,2,4096,0.006,vllm_graph\n");
  auto tables = CollectiveTables::Load({(dir_ / "comm.csv").string()});
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  auto t = KernelTables::Load(dir_.string(), 2);
  ASSERT_TRUE(t.ok()) << t.status().message();
  KernelModelShape shape = Shape(2);
  shape.comm = ParallelComm(TpLinks(2), std::make_shared<const CollectiveTables>(std::move(tables).value()));
  const KernelTableStepModel m(std::move(t).value(), shape);
  // Two decodes: T = 2 tokens, 2 x 2048 x 2 B = 8192 B = 4096 bf16 elements: the table's
  // 0.006 ms row, 2 per layer x 2 layers; compute 218 us (InterpolatesLinearlyOnEveryAxis).
  const StepCost c = m.Cost(std::vector<StepChunk>{Decode(16), Decode(32)});
  EXPECT_EQ(c.collectives, Us(4 * 6));
  EXPECT_EQ(c.gpu, Us(218 + 4 * 6));
  // A step the table does not reach (T = 4: 16 KiB) follows the edge slope and says so.
  EXPECT_TRUE(m.Cost(Decodes(4, 16)).extrapolated);
}

TEST_F(KernelTableTest, PipelineStagesHandOverHiddenStatesAndResidual) {
  auto t = KernelTables::Load(dir_.string(), 1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  KernelModelShape shape = Shape(2);
  ParallelLinks links;
  links.pp = 2;
  links.pp_link = LinkCost{50e9, Us(2)};
  shape.comm = ParallelComm(links, nullptr);
  const KernelTableStepModel m(std::move(t).value(), shape);
  const StepCost c = m.Cost(std::vector<StepChunk>{Decode(16)});
  // One boundary, two tensors of 4096 B: 2 x (2 us + 4096 B / 50 GB/s = 2.08192 us -> 2082 ns).
  EXPECT_EQ(c.collectives, Ns(2 * 2082));
  EXPECT_EQ(c.gpu, Us(138) + Ns(2 * 2082));
}

TEST_F(KernelTableTest, FactoryChargesTpWithoutPeerToPeerThroughHostMemory) {
  const Catalog& cat = Catalog::Builtin();
  StepModelContext ctx;
  ctx.memory.model = cat.Model("llama-3.1-8b").value();  // 32 layers, hidden 4096
  ctx.memory.gpu = cat.Gpu("rtx4090").value();           // no peer-to-peer access
  ctx.memory.layout = Parallelism{2, 1, 1};
  ctx.tp_link = cat.Link("pcie4").value();                 // 32 GB/s, 1 us
  ctx.pp_link = ctx.tp_link;
  ctx.scenario_dir = dir_.parent_path().string();
  const YamlDocument doc = perf_test::Yaml("step_model: {kind: kernel-table, dir: " + dir_.filename().string() +
                                           ", collectives: alpha-beta}\n");
  auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const StepCost c = (*m)->Cost(std::vector<StepChunk>{Decode(16)});
  // 1 x 4096 x 2 B = 8192 B; no custom kernel without P2P: NCCL's ring through host memory
  // (2 us per hop, 16 GB/s): 2 x 2 us + 2 x 1/2 x 8192 B / 16 GB/s = 4.512 us; x 2 x 32.
  EXPECT_EQ(c.collectives, Ns(64 * 4512));
  EXPECT_EQ(c.gpu, Us(528) + Ns(64 * 4512));  // 2 + 32 x 13 + 110 us of kernels
}

TEST_F(KernelTableTest, FactoryCollectiveSourceErrorsAreLocated) {
  StepModelContext ctx;
  ctx.memory.model = Catalog::Builtin().Model("llama-3.1-8b").value();
  ctx.scenario_dir = dir_.parent_path().string();
  const std::string head = "step_model: {kind: kernel-table, dir: " + dir_.filename().string() + ", collectives: ";
  const auto error = [&](const std::string& tail) {
    const YamlDocument doc = perf_test::Yaml(head + tail + "}\n");
    auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : m.status().message();
  };
  EXPECT_THAT(error("alphabeta"),
              HasSubstr("step_model.collectives: expected 'alpha-beta' or {tables: [PATH, ...]}, got 'alphabeta'"));
  EXPECT_THAT(error("{table: x.csv}"), HasSubstr("step_model.collectives: unknown field 'table'; did you mean 'tables'?"));
  EXPECT_THAT(error("{tables: []}"), HasSubstr("step_model.collectives.tables: expected at least one"));
  EXPECT_THAT(error("{tables: [missing.csv]}"),
              HasSubstr("step_model.collectives.tables: " + (dir_.parent_path() / "missing.csv").string() +
                        ": no such collective table file or folder"));
}

TEST_F(KernelTableTest, MissingTableIsAnError) {
  std::filesystem::remove(dir_ / "attention.csv");
  auto t = KernelTables::Load(dir_.string(), 1);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), 3);
  EXPECT_THAT(t.status().message(), HasSubstr("missing kernel table 'attention.csv'"));
}

TEST_F(KernelTableTest, BadNumberIsLocated) {
  Write("dense.csv", "layer,tokens,time_us\nqkv_proj,1,10\nqkv_proj,3,x\n");
  auto t = KernelTables::Load(dir_.string(), 1);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("dense.csv:3:12: time_us: expected a number"));
}

TEST_F(KernelTableTest, FactoryBuildsItFromTheScenario) {
  StepModelContext ctx;
  ctx.memory.model = Catalog::Builtin().Model("llama-3.1-8b").value();
  ctx.scenario_dir = dir_.parent_path().string();
  const YamlDocument doc =
      perf_test::Yaml("step_model: {kind: kernel-table, dir: " + dir_.filename().string() + "}\n");
  auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->kind(), "kernel-table");
  // 32 layers: 2 + 32 * 13 + 110.
  EXPECT_EQ((*m)->Cost(std::vector<StepChunk>{Decode(16)}).gpu, Us(528));
}

TEST_F(KernelTableTest, FactoryRejectsAnMoeModelWithoutMoeTable) {
  StepModelContext ctx;
  ctx.memory.model = Catalog::Builtin().Model("qwen3-30b-a3b").value();
  ctx.scenario_dir = dir_.parent_path().string();
  const YamlDocument doc =
      perf_test::Yaml("step_model: {kind: kernel-table, dir: " + dir_.filename().string() + "}\n");
  auto m = MakeStepCostModel(doc.root()["step_model"], ctx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().exit_code(), 3);
  EXPECT_THAT(m.status().message(), HasSubstr("scenario.yaml:1:39: step_model.dir: model 'qwen3-30b-a3b' is MoE "
                                              "but the profile has no moe.csv"));
}

// The shared RTX 4090 profile: a one-token decode step is exactly the table's numbers.
TEST(KernelTableShared, Rtx4090DecodeMatchesTheTables) {
  FP_REQUIRE_SHARED_DATA();
  const std::string dir = testing::SharedPath("profiles/llmservingsim/perf/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1");
  auto t = KernelTables::Load(dir, 1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->dense_ops.size(), 7u);  // act_fn, down_proj, gate_up_proj, layernorm, o_proj, qkv_proj, rotary_emb
  bool outside = false;
  const double per_layer = t->per_layer.Value(1, &outside);
  const double attention = t->decode_attention.Value(1, 16, &outside);
  const double expected = t->per_step.Value(1, &outside) + 32 * (per_layer + attention) + t->per_sequence.Value(1, &outside);
  EXPECT_FALSE(outside);
  const KernelTableStepModel m(std::move(t).value(), Shape(32));
  const StepCost c = m.Cost(std::vector<StepChunk>{Decode(16)});
  EXPECT_EQ(c.gpu, Duration::Nanos(std::llround(expected)));
  // A 2048-token prefill and a 256-decode batch stay inside the measured grid.
  EXPECT_FALSE(m.Cost(std::vector<StepChunk>{Prefill(2048)}).extrapolated);
  EXPECT_FALSE(m.Cost(Decodes(256, 16384)).extrapolated);
}

TEST(KernelTableShared, ReadsGzipTablesAndMoe) {
  FP_REQUIRE_SHARED_DATA();
  const std::string dir =
      testing::SharedPath("profiles/llmservingsim/perf/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16/tp1");
  auto t = KernelTables::Load(dir, 1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->has_moe);
  EXPECT_GT(t->skew_alpha, 0.0);  // meta.json skew_fit.per_tp.1.alpha_default
  const KernelTableStepModel m(std::move(t).value(), Shape(48, 128, 8, 2));
  const Duration one = m.Cost(std::vector<StepChunk>{Decode(512)}).gpu;
  const Duration many = m.Cost(Decodes(64, 512)).gpu;
  EXPECT_GT(one, Duration());
  EXPECT_GT(many, one);
}

}  // namespace
}  // namespace fleetplan
