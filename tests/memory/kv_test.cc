// KV arithmetic: bytes per token (whole model, per rank), replication, MLA, windows and
// block reservation; and the independence of the weight and KV formats.
#include "fleetplan/memory/kv.h"

#include <gtest/gtest.h>

#include "memory/test_specs.h"

namespace fleetplan {
namespace {

using memory_test::Dense70b;
using memory_test::Inputs;
using memory_test::MlaModel;
using memory_test::Show;
using memory_test::Windowed;

TEST(PlanKvShape, DenseGqaPerTokenAndPerRank) {
  // 2 × 8 KV heads × 128 × 2 B = 4096 B per layer; × 80 = 327,680 B (320 KiB) per token.
  // tp 4: 2 KV heads per rank, 1024 B per layer per rank.
  const KvShape kv = PlanKvShape(Inputs(Dense70b(), 4));
  EXPECT_EQ(kv.elements_per_layer, 2048);
  EXPECT_EQ(kv.bytes_per_layer.count(), 4096);
  EXPECT_EQ(kv.bytes_per_token.count(), 327'680);
  EXPECT_EQ(kv.kv_heads_per_rank, 2);
  EXPECT_EQ(kv.bytes_per_layer_per_rank.count(), 1024);
  EXPECT_EQ(kv.replication, 1);
  Show("KV per token: 2 × 8 × 128 × 2 B × 80 layers = {} B; per rank at tp 4: {} B × 80 = {} B",
       kv.bytes_per_token.count(), kv.bytes_per_layer_per_rank.count(),
       kv.bytes_per_layer_per_rank.count() * 80);
}

TEST(PlanKvShape, KvHeadsReplicatedBeyondTheirCount) {
  // tp 16 > 8 KV heads: still one head (256 elements × 2 B = 512 B per layer) per rank.
  const KvShape kv = PlanKvShape(Inputs(Dense70b(), 16));
  EXPECT_EQ(kv.kv_heads_per_rank, 1);
  EXPECT_EQ(kv.bytes_per_layer_per_rank.count(), 512);
  EXPECT_EQ(kv.replication, 2);
  EXPECT_EQ(PlanKvShape(Inputs(Dense70b(), 8)).bytes_per_layer_per_rank.count(), 512);
}

TEST(PlanKvShape, MlaLatentIsNotShardedByTp) {
  // (512 latent + 64 RoPE key) × 2 B = 1152 B per layer, on every rank whatever the tp.
  for (int64_t tp : {1, 4, 16}) {
    const KvShape kv = PlanKvShape(Inputs(MlaModel(), tp));
    EXPECT_TRUE(kv.latent);
    EXPECT_EQ(kv.bytes_per_layer.count(), 1152);
    EXPECT_EQ(kv.bytes_per_layer_per_rank.count(), 1152) << "tp " << tp;
    EXPECT_EQ(kv.replication, tp);
  }
}

TEST(PlanKvShape, KvFormatChangesKvOnlyAndWeightFormatChangesNothingHere) {
  MemoryInputs in = Inputs(Dense70b(), 4);
  const KvShape bf16 = PlanKvShape(in);
  in.weight_dtype = DType::kInt4;
  EXPECT_EQ(PlanKvShape(in).bytes_per_token, bf16.bytes_per_token);
  in.kv_dtype = DType::kFp8;
  EXPECT_EQ(PlanKvShape(in).bytes_per_token.count(), bf16.bytes_per_token.count() / 2);
  in.kv_dtype = DType::kFp4;  // packed: two elements per byte
  EXPECT_EQ(PlanKvShape(in).bytes_per_token.count(), bf16.bytes_per_token.count() / 4);
}

TEST(LayerBlocks, WholeContextAndWindowBlocks) {
  EXPECT_EQ(LayerBlocks(32768, 32768, 16), 2048);
  EXPECT_EQ(LayerBlocks(1000, 1000, 16), 63);  // 1000 / 16 = 62.5 → 63 blocks
  // The header's picture: window 20 in blocks of 8 touches ceil(19 / 8) + 1 = 4 blocks.
  EXPECT_EQ(LayerBlocks(40, 20, 8), 4);
  // Never more than the whole context needs.
  EXPECT_EQ(LayerBlocks(24, 20, 8), 3);
  EXPECT_EQ(LayerBlocks(32768, 4096, 16), 257);
  EXPECT_EQ(LayerBlocks(32768, 4097, 16), 257);
  EXPECT_EQ(LayerBlocks(32768, 4098, 16), 258);
}

TEST(PlanSequenceKv, ShorterWindowReducesKvAndLeavesWeightsAlone) {
  MemoryInputs in = Inputs(Dense70b(), 4);
  const std::vector<StageLayers> stages = SplitStages(in.model, 1);
  const SequenceKv full = PlanSequenceKv(in, PlanKvShape(in), stages, 32768);
  const Bytes weights_full = PlanWeights(in).bytes_per_rank[0];
  in.kv_window = 4096;
  const SequenceKv windowed = PlanSequenceKv(in, PlanKvShape(in), stages, 32768);
  // Full: 80 layers × 32768 tokens × 4096 B = 10 GiB; per rank × 1024 B = 2.5 GiB.
  EXPECT_EQ(full.bytes.count(), 80LL * 32768 * 4096);
  EXPECT_EQ(full.reserved_bytes_per_rank[0].count(), 80LL * 2048 * 16 * 1024);
  // Window 4096: 80 × 4096 tokens × 4096 B; reserved 80 × 257 blocks × 16 × 1024 B.
  EXPECT_EQ(windowed.windows.global_tokens, 4096);
  EXPECT_EQ(windowed.bytes.count(), 80LL * 4096 * 4096);
  EXPECT_EQ(windowed.reserved_bytes_per_rank[0].count(), 80LL * 257 * 16 * 1024);
  EXPECT_EQ(PlanWeights(in).bytes_per_rank[0], weights_full);
  Show("context 32768: reserved KV per sequence per rank {} B ({:.2f} GiB) → kv_window 4096: {} B "
       "({:.3f} GiB); weights per rank stay {} B",
       full.reserved_bytes_per_rank[0].count(), full.reserved_bytes_per_rank[0].gib(),
       windowed.reserved_bytes_per_rank[0].count(), windowed.reserved_bytes_per_rank[0].gib(),
       weights_full.count());
}

TEST(PlanSequenceKv, ModelWindowAppliesToWindowedLayersOnly) {
  // 23 global layers keep 8192 tokens, 23 windowed layers keep 4096.
  // 2 × 16 × 128 × 2 B = 8192 B per layer-token.
  const MemoryInputs in = Inputs(Windowed(), 1);
  const SequenceKv seq = PlanSequenceKv(in, PlanKvShape(in), SplitStages(in.model, 1), 8192);
  EXPECT_EQ(seq.windows.global_tokens, 8192);
  EXPECT_EQ(seq.windows.windowed_tokens, 4096);
  EXPECT_EQ(seq.bytes.count(), (23LL * 8192 + 23LL * 4096) * 8192);
  // Blocks: 23 × 512 + 23 × (ceil(4095 / 16) + 1 = 257).
  EXPECT_EQ(seq.layer_blocks_per_rank[0], 23 * 512 + 23 * 257);
}

}  // namespace
}  // namespace fleetplan
