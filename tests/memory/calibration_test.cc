// The memory plan against a measured vLLM run: shared/data/profiles/llmservingsim/vllm-runs/
// RTX4090/Llama-3.1-8B/meta.json records the KV blocks vLLM 0.19.0 allocated (2588 blocks of
// 16 tokens) for Llama-3.1-8B, bf16, tp 1, gpu_memory_utilization 0.9, max_num_batched_tokens
// 2048, max_num_seqs 256, on a GPU whose total memory it also records. Our planning constants
// are estimates, so this checks the prediction stays within kTolerance of that measurement.
#include <cmath>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "fleetplan/core/json.h"
#include "fleetplan/memory/plan.h"
#include "memory/test_specs.h"

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using memory_test::Show;

// Allowed relative error of the predicted KV blocks: the activation and runtime terms are
// planning constants, not a profile of this machine.
constexpr double kTolerance = 0.03;

const std::string kMeta =
    ::fleetplan::testing::SharedDataRoot() + "/profiles/llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B/meta.json";

Json ReadMeta() {
  std::ifstream in(kMeta);
  EXPECT_TRUE(in.good()) << "missing " << kMeta;
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json).
ModelSpec Llama8b() {
  ModelSpec m;
  m.name = "llama-3.1-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = 14336;
  m.vocab = 128256;
  m.max_context = 131072;
  return m;
}

TEST(Calibration, KvBlocksWithinToleranceOfMeasuredVllm) {
  FP_REQUIRE_SHARED_DATA();
  const Json meta = ReadMeta();
  const Json& args = meta.at("engine_kwargs");
  ASSERT_EQ(args.at("tensor_parallel_size").get<int64_t>(), 1);
  ASSERT_EQ(args.at("dtype").get<std::string>(), "bfloat16");
  ASSERT_EQ(args.at("kv_cache_dtype").get<std::string>(), "auto");

  MemoryInputs in;
  in.model = Llama8b();
  in.gpu.name = meta.at("hardware").at("device_name").get<std::string>();
  in.gpu.memory = Bytes(meta.at("hardware").at("device_total_memory_bytes").get<int64_t>());
  in.gpu_memory_utilization = meta.at("kv_cache").at("gpu_memory_utilization").get<double>();
  in.block_tokens = meta.at("kv_cache").at("block_size").get<int64_t>();
  in.max_batched_tokens = args.at("max_num_batched_tokens").get<int64_t>();
  in.max_running = args.at("max_num_seqs").get<int64_t>();
  Expected<KvPoolSize> pool = SizeKvPool(in);
  ASSERT_TRUE(pool.ok()) << pool.status().message();

  const int64_t measured = meta.at("kv_cache").at("num_gpu_blocks").get<int64_t>();
  const double error = static_cast<double>(pool->kv_blocks_per_replica - measured) /
                       static_cast<double>(measured);
  Show("{} ({} B × {}): predicted {} KV blocks ({} B usable), vLLM measured {}: {:+.1f}%",
       in.gpu.name, in.gpu.memory.count(), in.gpu_memory_utilization,
       pool->kv_blocks_per_replica, pool->kv_bytes_per_rank.count(), measured, 100.0 * error);
  EXPECT_LT(std::abs(error), kTolerance);
}

}  // namespace
}  // namespace fleetplan
