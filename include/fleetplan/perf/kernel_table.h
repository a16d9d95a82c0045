// The kernel-table step model: one step's time composed from per-layer kernel tables
// measured on the target GPU with the target engine (LLMServingSim's vLLM profiler
// format, docs/step-models.md "kernel-table").
//
// A profile folder (e.g. profiles/llmservingsim/perf/<hw>/<org>/<model>/bf16/tp1) holds,
// all times in microseconds:
//   dense.csv            layer,tokens,time_us       one layer's op vs tokens in the step
//   per_sequence.csv     layer,sequences,time_us    lm_head and sampler vs sequences
//   attention.csv[.gz]   prefill_chunk,kv_prefill,n_decode,kv_decode,time_us
//   moe.csv (optional)   tokens,activated_experts,time_us   one MoE layer, per rank
//   ../meta.json (optional) skew_fit.per_tp.<tp>.alpha_default (decode skew)
//
// One step (T = tokens computed, S = sequences, L = model layers):
//
//   step = embedding(T) + final_layernorm(T)                  once per step
//        + L * ( sum of the other dense ops at T               every layer
//              + attention(batch composition)
//              + moe(T, expected active local experts) )       MoE models only
//        + lm_head(S) + sampler(S)
//
//   attention = sum over prefill chunks of P(chunk, context)   rows with n_decode = 0
//             + D(decodes, mean KV) + alpha * (D(decodes, max KV) - D(decodes, mean KV))
//                                                              rows with prefill_chunk = 0
//
// The mixed rows (a prefill chunk and decodes in one kernel) are not used: the sum of
// the two parts is what a step with several prefill chunks needs, and it costs one
// extra kernel launch per mixed step (a few microseconds). alpha is the decode-skew
// correction (0 when the profile has no skew fit). Expected active local experts for T
// tokens with top-k of E experts split over ep ranks: (E / ep) * (1 - (1 - k/E)^(T*ep)),
// the tokens of all ep ranks reaching this rank's experts (DP x EP lock-step), and the
// MoE table is read at (T, that count). With ep > 1 each MoE layer also pays the DP+EP
// exchange of vLLM's allgather_reducescatter all2all backend (assumed), an all-gather of the ep ranks' hidden states before the experts
// and a reduce-scatter after (perf/collectives.h, alpha-beta over ep_link):
//
//   ep_comm = AllGather(ep, T*ep*hidden*bytes) + ReduceScatter(ep, T*ep*hidden*bytes)
//
// With tp > 1 every layer also all-reduces its activations twice (after the attention
// output projection and after the FFN down projection, kTpAllReducesPerLayer), and with
// pp > 1 each of the pp - 1 stage boundaries hands over the hidden states and the residual
// (kPpTensorsPerBoundary send/recv), priced by ParallelComm (perf/collective_tables.h:
// measured collective tables where given, else alpha-beta over the run's links):
//
//   tp_comm = L * 2 * AllReduce(tp, T*hidden*bytes)
//   pp_comm = (pp - 1) * 2 * SendRecv(T*hidden*bytes)
//
// The tables of a tp<N> folder are one rank's kernels (measured on one GPU with the
// shapes divided by N) and hold no communication. Every communication term is counted in
// StepCost.collectives as well as in gpu.
//
// Interpolation is linear in each axis between measured points (bilinear on 2-D
// tables), as LLMServingSim does. Beyond the last measured point of any axis the edge
// segment's slope continues and StepCost.extrapolated is set; below the first point the
// first point's value is used (the tables start at 1 token / 1 sequence / 16 KV tokens,
// where kernel time is flat). 2-D tables may be ragged (rows cover different ranges):
// between two rows, a row whose range ends before the point keeps its last value, and
// the point counts as extrapolated only beyond both rows' ranges.
// Thread model: immutable after loading; safe to share. Cost is O(batch), no allocation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/perf/collective_tables.h"
#include "fleetplan/perf/collectives.h"
#include "fleetplan/perf/step_cost.h"

namespace fleetplan {

// Piecewise-linear y(x) over ascending x (>= 1 point); values in nanoseconds.
struct KernelCurve {
  std::vector<double> xs;
  std::vector<double> ns;
  double Value(double x, bool* outside) const;
};

// z(x, y): one curve over y per measured x (rows may cover different y ranges, as the
// measured grids do: large KV at large batch is missing), linear in x between the two
// rows around x. Values in nanoseconds.
struct KernelGrid {
  std::vector<double> xs;          // ascending, >= 1 entry
  std::vector<KernelCurve> rows;   // rows[i] is z(xs[i], .)
  double Value(double x, double y, bool* outside) const;
};

struct KernelTables {
  std::string dir;
  KernelCurve per_step;       // embedding + final_layernorm, vs tokens
  KernelCurve per_layer;      // every other dense op of one layer, vs tokens
  KernelCurve per_sequence;   // lm_head + sampler, vs sequences
  KernelGrid prefill_attention;  // (prefill_chunk, kv_prefill), one layer
  KernelGrid decode_attention;   // (n_decode, kv_decode), one layer
  bool has_moe = false;
  KernelGrid moe;                // (tokens, activated_experts), one layer
  double skew_alpha = 0;
  std::vector<std::string> dense_ops;  // names summed into per_layer, sorted

  // Reads `dir` (see above). `tp` selects the skew fit in ../meta.json. Errors are
  // located at the file, line and column.
  static Expected<KernelTables> Load(const std::string& dir, int64_t tp);
};

struct KernelModelShape {
  int64_t layers = 0;             // >= 1
  int64_t experts = 0;            // routed experts per MoE layer (0: dense model)
  int64_t experts_per_token = 0;  // top-k
  int64_t ep = 1;                 // expert-parallel ranks (>= 1)
  // With ep > 1: the hidden size and the link between the ep ranks, for the collectives
  // around each MoE layer. REQUIRES when ep > 1: hidden >= 1, ep_link.bandwidth > 0.
  int64_t hidden = 0;
  int64_t activation_bytes = 2;   // bf16 hidden states
  LinkCost ep_link;
  // Tensor- and pipeline-parallel communication. REQUIRES when comm.links().tp > 1 or
  // comm.links().pp > 1: hidden >= 1 (and the links ParallelLinks requires).
  ParallelComm comm;
};

class KernelTableStepModel final : public StepCostModel {
 public:
  // REQUIRES: shape.layers >= 1; tables.has_moe when shape.experts > 0.
  KernelTableStepModel(KernelTables tables, KernelModelShape shape)
      : tables_(std::move(tables)), shape_(shape) {}

  StepCost Cost(std::span<const StepChunk> chunks) const override;
  StepCost CostPadded(std::span<const StepChunk> chunks, StepPadding padding) const override;
  std::string kind() const override { return "kernel-table"; }
  Json Describe() const override;

  const KernelTables& tables() const { return tables_; }

 private:
  double MoeNs(int64_t tokens, bool* outside) const;
  Duration EpExchange(int64_t tokens) const;  // both collectives of one MoE layer
  Duration ParallelCommunication(int64_t tokens, bool* outside) const;  // TP + PP of one step
  StepCost CostOf(std::span<const StepChunk> chunks, StepPadding padding) const;
  KernelTables tables_;
  KernelModelShape shape_;
};

}  // namespace fleetplan
