// The aiconfigurator step model: one step composed from NVIDIA aiconfigurator's measured
// kernel tables for vLLM (GEMM, context attention, generation attention, MoE) at the
// shapes one tensor-parallel rank of a catalog model runs (docs/step-models.md
// "aiconfigurator").
//
// A GPU folder (e.g. profiles/aiconfigurator/h100_sxm) holds, every latency in
// milliseconds for one kernel call on one GPU, plain or gzip CSV:
//   gemm/vllm/<version>/gemm_perf.csv[.gz]
//       gemm_dtype, m (tokens), n, k, latency             C[m,n] = A[m,k] B[k,n]
//   attention/vllm/<version>/context_attention_perf.csv[.gz]
//       batch_size, isl, num_heads, num_key_value_heads, head_dim, kv_cache_dtype,
//       window_size, latency                              prefill, no cached prefix
//   attention/vllm/<version>/generation_attention_perf.csv[.gz]
//       batch_size, step (KV history per sequence), the same head columns, latency
//   moe/vllm/<version>/moe_perf.csv[.gz] (MoE models only)
//       moe_dtype, num_tokens, hidden_size, inter_size, topk, num_experts, moe_tp_size,
//       moe_ep_size, distribution, latency                one fused MoE layer
//   comm/...                                              collectives (perf/collective_tables.h)
//
// Shapes of one rank (h = heads / tp, g = max(1, kv_heads / tp), d = head_dim, H = hidden,
// F = intermediate / tp, V = ceil(vocab / tp)):
//
//   qkv_proj   n = (h + 2g)·d            k = H        every layer, m = T
//   o_proj     n = H                     k = h·d      every layer, m = T
//   gate_up    n = 2F (F if not gated)   k = H        dense FFN layers, m = T
//   down_proj  n = H                     k = F        dense FFN layers, m = T
//   router     n = experts               k = H        MoE layers, m = T
//   shared_*   as gate_up / down with the shared experts' width / tp   MoE layers
//   moe        moe_perf at (num_tokens T, hidden H, inter expert width, topk, experts,
//              moe_tp = tp / ep, moe_ep = ep)           MoE layers
//   lm_head    n = V                     k = H        once per step, m = S
//
// One step (T = tokens computed, S = sequences, L = layers, L_dense + L_moe = L; each
// attention group is the layers of one window: global layers with window_size 0, windowed
// layers with the model's sliding window):
//
//   step = L × (qkv(T) + o(T)) + L_dense × (gate_up(T) + down(T))
//        + L_moe × (moe(T) + router(T) + shared(T))
//        + Σ_groups L_g × ( Σ_prefill chunks P_g(c, n) + D_g(decodes, mean context) )
//        + lm_head(S) + other kernels(T, S)                      (AicOtherKernels)
//        + L × 2 × AllReduce(tp, T·H·2 B) + (pp − 1) × 2 × SendRecv(T·H·2 B)
//
//   P_g(c, n) = C_g(c + n) × pairs(c, n) / pairs(0, c + n)   a chunk of n tokens after c
//     C_g(s) = context_attention at batch 1, isl s; pairs(c, n) = Σ_{q=c+1}^{c+n} min(q, W)
//     (W = the group's window, unbounded for global layers): the table measures a prompt
//     with no cached prefix, and the kernel's work is its query-key pairs, so a chunk pays
//     its share of the pairs of the whole prefix (aiconfigurator's prefix correction).
//     Several prefill chunks in one step are summed (one table call each).
//   D_g(b, s) = generation_attention at batch b, step s = the decodes' mean context.
//
// Interpolation: linear on every axis (m; n and k bilinearly between the four measured
// (n, k) pairs around a shape, folded into one curve over m at load time; isl; batch and
// step). The grids are mostly power-of-two spaced, but kernel time is affine in each axis
// within a regime (compute ∝ m·n·k, weight streaming ∝ n·k, KV streaming ∝ batch × step),
// and linear interpolation is exact for an affine function while log-linear would bow
// between points (at the midpoint of 2^j..2^(j+1) it gives the geometric, not the
// arithmetic, mean). Below the first point of an axis the first value is used (the grids
// start at 1 token / 1 sequence / 32 columns, where kernel time is flat). Beyond the last
// point the edge segment's slope continues and StepCost.extrapolated is set, except for
// context attention beyond its longest prompt, which grows with the pairs (C(s_max) ×
// pairs(0, s) / pairs(0, s_max): compute-bound at 16k tokens, quadratic, where a straight
// line would undercount), also flagged. A GEMM whose n or k lies beyond the measured
// (n, k) grid flags every step that uses it. Points measured twice are averaged.
//
// Rows are filtered while the files are read: only the model's dtypes and the rank's
// attention and MoE shapes are kept (docs/PERFORMANCE.md has the load time). A shape the
// tables lack is an error naming the shape, the file and the nearest shapes present.
//
// Thread model: immutable after loading; safe to share. Cost is O(batch), no allocation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/memory/inputs.h"
#include "fleetplan/perf/collective_tables.h"
#include "fleetplan/perf/kernel_table.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// The vLLM build whose tables are read by default (docs/step-models.md says why 0.24.0).
inline constexpr const char* kDefaultAicVersion = "0.24.0";
// aiconfigurator's token-to-expert routing of the MoE table read by default.
inline constexpr const char* kDefaultAicMoeDistribution = "balanced";

// Where the tables are: `dir`/<table>/vllm/`version`/<name>.csv[.gz].
struct AicSource {
  std::string dir;
  std::string version = kDefaultAicVersion;
  std::string moe_distribution = kDefaultAicMoeDistribution;
};

// One GEMM of the model at the shape one rank runs.
struct AicGemmShape {
  std::string name;  // qkv_proj, o_proj, gate_up_proj, down_proj, router, shared_gate_up,
                     // shared_down, lm_head
  int64_t n = 0;
  int64_t k = 0;
};

// The attention layers of one window.
struct AicAttentionGroup {
  int64_t layers = 0;
  int64_t window = 0;  // tokens; 0 = global (window_size 0 in the tables)
};

// What the model looks the tables up at: one rank's shapes, the layer counts and the
// table dtypes. Built by AicShapeOf; tests may build one by hand.
struct AicModelShape {
  std::string model;         // for messages
  int64_t layers = 0;        // L >= 1
  int64_t dense_layers = 0;  // layers with a dense FFN
  int64_t moe_layers = 0;    // layers with routed experts
  int64_t hidden = 0;        // H
  int64_t heads = 0;         // query heads per rank
  int64_t kv_heads = 0;      // KV heads per rank (replicated when tp > kv_heads)
  int64_t head_dim = 0;
  std::vector<AicGemmShape> layer_gemms;  // every layer: qkv_proj, o_proj
  std::vector<AicGemmShape> dense_gemms;  // dense FFN layers: gate_up_proj, down_proj
  std::vector<AicGemmShape> moe_gemms;    // MoE layers: router, shared experts
  AicGemmShape lm_head;
  std::vector<AicAttentionGroup> attention;  // 1 or 2 groups; layers sum to L
  // MoE (moe_layers > 0): moe_perf's key.
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_intermediate = 0;
  int64_t moe_tp = 1;
  int64_t moe_ep = 1;
  std::string gemm_dtype = "bfloat16";  // gemm_perf gemm_dtype
  std::string moe_dtype = "bfloat16";   // moe_perf moe_dtype
  std::string kv_dtype = "bfloat16";    // attention kv_cache_dtype
  // The kernels the tables do not time (AicOtherKernels): the FFN width per rank of a dense
  // layer (F above; 0 without dense layers), the full vocabulary (the sampler reads every
  // logit) and the KV bytes per element.
  int64_t ffn_per_rank = 0;
  int64_t vocab = 0;
  int64_t kv_bytes = 2;
};

// The kernels of a step that the tables do not time, each costing
// max(floor, bytes / bandwidth), where floor is the shortest bf16 kernel the GPU's GEMM
// table measures (a launch-bound kernel's time on that GPU) and bandwidth is the GPU's HBM
// bandwidth × kOtherKernelMemoryEfficiency (docs/step-models.md "Kernels the tables do not
// time"). Per layer, on T tokens (bf16 activations; H = hidden, on every rank whatever tp):
//   two fused residual-add + RMSNorm kernels   4·T·H·2 B each
//   rotary embedding of q and k                2·T·(h + g)·d·2 B
//   KV-cache write                             2·T·2g·d·(KV bytes) B
//   SiLU-and-multiply (dense layers)           3·T·F·2 B
// per step: the embedding gather (2·T·H·2 B), the final norm (3·T·H·2 B) and the sampler
// (kSamplerKernels launch-bound kernels plus two passes over S × vocab fp32 logits).
// These do not shrink with tp (the norms run on the full hidden state on every rank), which
// is why leaving them out flatters wide tensor parallelism.
struct AicOtherKernels {
  bool enabled = false;        // the factory turns it on (other_kernels, default true)
  double floor_ns = 0;         // > 0 when enabled
  double bytes_per_ns = 0;     // bandwidth after efficiency, > 0 when enabled
};
inline constexpr int kSamplerKernels = 10;
inline constexpr double kOtherKernelMemoryEfficiency = 0.8;

// The shapes of `model` on one rank of `layout` with these weight and KV formats. Errors
// (not located; the factory locates them): MLA attention (no rows in these tables), a
// weight or KV format the tables do not measure (bf16 and fp8 are), heads or the FFN
// width not divisible by tp, ep not dividing tp.
Expected<AicModelShape> AicShapeOf(const ModelSpec& model, const Parallelism& layout, DType weight_dtype,
                                   DType kv_dtype);

// One GEMM's time over m, for its (n, k), bilinear between the measured (n, k) pairs
// around it.
struct AicGemm {
  AicGemmShape shape;
  KernelCurve over_m;                              // ns vs m
  bool beyond_grid = false;                        // n or k beyond the measured pairs: every use is extrapolated
  int64_t n_lo = 0, n_hi = 0, k_lo = 0, k_hi = 0;  // the measured pairs used
  double Value(int64_t m, bool* outside) const;
};

// Generation attention z(batch, step): one curve over step per measured batch; rows may
// end at different steps (large KV at large batch is not measured). Linear in batch
// between the two rows around it, each row extended by its edge slope beyond its end
// (flagged). Values in ns.
struct AicAttentionGrid {
  std::vector<double> batches;    // ascending, >= 1 entry
  std::vector<KernelCurve> rows;  // rows[i] is z(batches[i], .)
  double Value(double batch, double step, bool* outside) const;
};

struct AicAttentionTables {
  AicAttentionGroup group;
  KernelCurve context;          // batch 1, ns vs isl
  AicAttentionGrid generation;  // ns vs (batch, step)
  // P(c, n) above. REQUIRES: n >= 1.
  double PrefillChunk(int64_t context_tokens, int64_t new_tokens, bool* outside) const;
};

// The tables of one model shape, filtered to what it needs.
struct AicKernels {
  AicSource source;
  std::string device;  // the `device` column of the GEMM rows read
  std::vector<AicGemm> layer_gemms;
  std::vector<AicGemm> dense_gemms;
  std::vector<AicGemm> moe_gemms;
  AicGemm lm_head;
  std::vector<AicAttentionTables> attention;
  bool has_moe = false;
  KernelCurve moe;                 // ns vs num_tokens, one MoE layer
  double shortest_gemm_ns = 0;     // the smallest latency of the table's bf16 GEMM rows (0: none)
  std::vector<std::string> files;  // the tables read, in order

  // Reads the tables under `source` for `shape`. Errors name the file (and line and column
  // for a malformed row) or the missing shape with the nearest ones present.
  static Expected<AicKernels> Load(const AicSource& source, const AicModelShape& shape);
};

// One step, term by term (what Cost sums). Every term is the sum over the layers it runs
// in, in ns before rounding; `total` is what Cost returns as `gpu`.
struct AicBreakdown {
  int64_t tokens = 0;     // T
  int64_t sequences = 0;  // S
  int64_t decodes = 0;
  double mean_context = 0;    // of the decodes
  double layer_gemms_ns = 0;  // L × (qkv + o)
  double ffn_ns = 0;          // L_dense × (gate_up + down)
  double moe_ns = 0;          // L_moe × (moe + router + shared)
  double context_attention_ns = 0;
  double generation_attention_ns = 0;
  double lm_head_ns = 0;
  double other_kernels_ns = 0;  // AicOtherKernels: norms, rotary, KV write, activation, sampler
  Duration collectives;  // TP all-reduces + PP send/recv
  Duration total;
  bool extrapolated = false;
};

class AicStepModel final : public StepCostModel {
 public:
  // REQUIRES: kernels loaded for `shape` (AicKernels::Load(source, shape)); when
  // comm.links().tp > 1 or pp > 1, shape.hidden >= 1.
  AicStepModel(AicKernels kernels, AicModelShape shape, ParallelComm comm, AicOtherKernels other = {})
      : kernels_(std::move(kernels)), shape_(std::move(shape)), comm_(std::move(comm)), other_(other) {}

  StepCost Cost(std::span<const StepChunk> chunks) const override;
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override;
  std::string kind() const override { return "aiconfigurator"; }
  Json Describe() const override;

  AicBreakdown Explain(std::span<const StepChunk> chunks, StepPadding padding = {}) const;
  const AicKernels& kernels() const { return kernels_; }

 private:
  AicKernels kernels_;
  AicModelShape shape_;
  ParallelComm comm_;
  AicOtherKernels other_;

  double OtherKernelsNs(int64_t tokens, int64_t sequences) const;
};

}  // namespace fleetplan
