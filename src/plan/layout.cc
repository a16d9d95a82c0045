// Layout search (layout.h): enumerate, reject with a reason, time, rank.
#include "fleetplan/core/flag_error.h"
#include "fleetplan/plan/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/native_dtype.h"
#include "fleetplan/core/error.h"
#include "fleetplan/memory/fit.h"
#include "fleetplan/memory/weights.h"
#include "fleetplan/perf/collective_tables.h"

namespace fleetplan {
namespace {

// Nodes with the same GPU type, memory and formats: one replica never mixes them.
struct GpuClass {
  std::string label;
  GpuSpec gpu;
  std::vector<int64_t> nodes;
  int64_t max_node_gpus = 0;
  int64_t nominal_gpus = 0;  // including GPUs that are down
};

std::vector<GpuClass> ClassesOf(const Cluster& c) {
  std::vector<GpuClass> classes;
  for (size_t i = 0; i < c.nodes().size(); ++i) {
    const ClusterNode& n = c.nodes()[i];
    auto same = [&](const GpuClass& k) {
      return k.gpu.name == n.gpu.name && k.gpu.memory == n.gpu.memory && k.gpu.dtypes == n.gpu.dtypes;
    };
    auto it = std::find_if(classes.begin(), classes.end(), same);
    if (it == classes.end()) {
      classes.push_back(GpuClass{n.gpu.name, n.gpu, {}, 0, 0});
      it = classes.end() - 1;
    }
    it->nodes.push_back(static_cast<int64_t>(i));
    it->max_node_gpus = std::max(it->max_node_gpus, n.gpu_count);
    it->nominal_gpus += n.gpu_count;
  }
  // Two classes of one GPU name are told apart by the first node of each.
  for (GpuClass& k : classes) {
    const auto count =
        std::count_if(classes.begin(), classes.end(), [&](const GpuClass& o) { return o.gpu.name == k.gpu.name; });
    if (count > 1) k.label = fmt::format("{}:{}", k.gpu.name, c.nodes()[static_cast<size_t>(k.nodes.front())].name);
  }
  return classes;
}

Status FlagError(std::string_view flag, std::string_view message) { return FlagValueError(flag, message); }

Status CheckRange(std::string_view flag, int64_t v, int64_t max) {
  if (v >= 1 && v <= max) return Status::Ok();
  return FlagError(flag, fmt::format("expected an integer between 1 and {}, got {}", max, v));
}

Status ValidateRequest(const LayoutRequest& r) {
  FP_RETURN_IF_ERROR(CheckRange("--batch", r.batch, kMaxSequences));
  if (r.batch_rule == BatchRule::kFleetConcurrency) {
    FP_RETURN_IF_ERROR(CheckRange("fleet_sequences", r.fleet_sequences, kMaxSequences));
  }
  FP_RETURN_IF_ERROR(CheckRange("--context", r.context, kMaxTokens));
  FP_RETURN_IF_ERROR(CheckRange("--prefill-tokens", r.prefill_tokens, kMaxTokens));
  FP_RETURN_IF_ERROR(CheckRange("--microbatches", r.microbatches, std::min(r.batch, r.prefill_tokens)));
  if (r.model.max_context > 0 && r.context > r.model.max_context) {
    return FlagError("--context", fmt::format("expected at most {} (the max_context of '{}'), got {}",
                                              r.model.max_context, r.model.name, r.context));
  }
  if (r.tp) FP_RETURN_IF_ERROR(CheckRange("--tp", *r.tp, kMaxSequences));
  if (r.pp) FP_RETURN_IF_ERROR(CheckRange("--pp", *r.pp, kMaxSequences));
  if (r.ep) FP_RETURN_IF_ERROR(CheckRange("--ep", *r.ep, kMaxSequences));
  if (r.dp) FP_RETURN_IF_ERROR(CheckRange("--dp", *r.dp, kMaxSequences));
  if (!(r.close_call_share >= 0 && r.close_call_share < 1)) {
    return FlagError("--close-call", fmt::format("expected a share in [0, 1), got {}", r.close_call_share));
  }
  return Status::Ok();
}

std::vector<int64_t> TpCandidates(const LayoutRequest& r, const GpuClass& k) {
  if (r.tp) return {*r.tp};
  std::vector<int64_t> out;
  for (int64_t tp = 1; tp <= k.max_node_gpus; ++tp) out.push_back(tp);
  int64_t p = 1;
  while (p <= k.max_node_gpus) p *= 2;
  for (; p <= std::min(k.nominal_gpus, r.model.heads); p *= 2) out.push_back(p);
  return out;
}

std::vector<int64_t> PpCandidates(const LayoutRequest& r, const GpuClass& k, int64_t tp) {
  if (r.pp) return {*r.pp};
  const int64_t max = std::max<int64_t>(1, std::min(r.model.layers, k.nominal_gpus / tp));
  std::vector<int64_t> out;
  for (int64_t pp = 1; pp <= max; ++pp) out.push_back(pp);
  return out;
}

std::vector<int64_t> EpCandidates(const LayoutRequest& r, int64_t tp) {
  if (r.ep) return {*r.ep};
  if (!r.model.moe) return {1};
  std::vector<int64_t> out;
  for (int64_t ep = 1; ep <= tp; ++ep) {
    if (tp % ep == 0) out.push_back(ep);
  }
  return out;
}

std::string DTypeGap(const GpuClass& k, const LayoutRequest& r) {
  const std::pair<const char*, DType> wanted[] = {{"weights", r.weight_dtype}, {"KV cache", r.kv_dtype}};
  for (const auto& [what, t] : wanted) {
    std::string gap = NativeDTypeGap(k.gpu, k.label, t, what);
    if (!gap.empty()) return gap;
  }
  return "";
}

// The shape of one step of a phase.
struct PhaseShape {
  int64_t tokens = 0;
  bool decode = false;
  int64_t microbatches = 1;
};

int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

class Evaluator {
 public:
  Evaluator(const LayoutRequest& r, const Cluster& c, const RuntimeSupport& runtime)
      : r_(r), c_(c), runtime_(runtime) {}

  // Decode sequences per replica the operating point asks of a layout with `dp` replicas.
  int64_t BatchAsked(int64_t dp) const {
    if (r_.batch_rule != BatchRule::kFleetConcurrency) return r_.batch;
    return std::max<int64_t>(1, CeilDiv(r_.fleet_sequences, std::max<int64_t>(dp, 1)));
  }

  void Evaluate(const GpuClass& k, Parallelism p, LayoutResult& out) const {
    std::string reason = Refusal(k, p);
    if (!reason.empty()) {
      out.rejected.push_back(RejectedLayout{k.label, p, std::move(reason)});
      return;
    }
    const ReplicaPacking packing = PackReplicas(c_, k.nodes, ReplicaShape{p.tp, p.pp}, r_.allow_cross_node_tp);
    if (packing.replicas == 0) {
      out.rejected.push_back(RejectedLayout{k.label, p, "no complete replica can be placed: " + packing.no_fit_reason});
      return;
    }
    const int64_t asked = BatchAsked(r_.dp.value_or(packing.replicas));
    int64_t batch = asked;
    MemoryInputs mem = MemoryOf(k, p, batch);
    Expected<FitResult> fit = CheckFit(FitRequest{mem, r_.context, batch});
    FP_ASSERT(fit.ok());  // the shape and the request were validated
    const bool shrink = r_.keep_near_misses || r_.batch_rule == BatchRule::kMostThatFit;
    if (!fit->fits && shrink && fit->max_sequences >= 1) {
      // A near miss (or the most that fit): timed at the sequences that fit.
      batch = std::min(batch, fit->max_sequences);
      mem = MemoryOf(k, p, batch);
      fit = CheckFit(FitRequest{mem, r_.context, batch});
      FP_ASSERT(fit.ok());
    }
    if (!fit->fits) {
      out.rejected.push_back(
          RejectedLayout{k.label, p, fmt::format("one replica does not fit: {}", fmt::join(fit->reasons, "; "))});
      return;
    }
    // The most that fit asks for what fits: never a near miss.
    if (r_.batch_rule == BatchRule::kMostThatFit) batch = std::min(asked, fit->max_sequences);
    if (r_.dp && *r_.dp > packing.replicas) {
      out.rejected.push_back(
          RejectedLayout{k.label, p,
                         fmt::format("dp {} needs {} replicas of tp {} × pp {} GPUs; the cluster holds {}", *r_.dp,
                                     *r_.dp, p.tp, p.pp, packing.replicas)});
      return;
    }
    FeasibleLayout f = Feasible(k, p, mem, *fit, packing, batch);
    f.batch_asked = r_.batch_rule == BatchRule::kMostThatFit ? batch : asked;
    out.feasible.push_back(std::move(f));
  }

 private:
  // Checks 1-3 of layout.h; empty when they pass.
  std::string Refusal(const GpuClass& k, Parallelism p) const {
    const MemoryInputs mem = MemoryOf(k, p, r_.batch);
    if (const auto bad = ValidateMemoryInputs(mem)) return bad->message;
    if (auto refused = runtime_.Refuse(r_.model, p)) return *refused;
    return DTypeGap(k, r_);
  }

  MemoryInputs MemoryOf(const GpuClass& k, Parallelism p, int64_t batch) const {
    MemoryInputs m;
    m.model = r_.model;
    m.gpu = k.gpu;
    m.layout = p;
    m.weight_dtype = r_.weight_dtype;
    m.kv_dtype = r_.kv_dtype;
    m.gpu_memory_utilization = r_.gpu_memory_utilization;
    m.max_batched_tokens = std::max(r_.prefill_tokens, batch);
    m.max_running = batch;
    return m;
  }

  FeasibleLayout Feasible(const GpuClass& k, Parallelism p, const MemoryInputs& mem, const FitResult& fit,
                          const ReplicaPacking& packing, int64_t batch) const {
    FeasibleLayout f;
    f.gpu = k.label;
    f.gpu_spec = k.gpu;
    f.node_gpus = k.max_node_gpus;
    f.batch = batch;
    f.layout = p;
    f.replicas = packing.replicas;
    f.dp = r_.dp.value_or(packing.replicas);
    f.stranded_gpus = packing.stranded_gpus;
    f.tp_link = packing.tp_link;
    f.pp_link = packing.pp_link;
    f.tp_over_slow_link = packing.tp_over_slow_link;
    f.after_loss = packing.after_loss;
    f.budget_per_rank = fit.plan.budget_per_rank;
    f.max_sequences = fit.max_sequences;
    for (const StagePlan& st : fit.plan.stages) {
      const Bytes kv = fit.sequence.reserved_bytes_per_rank[static_cast<size_t>(st.layers.stage)] * batch;
      f.bytes_per_rank =
          std::max(f.bytes_per_rank, st.weights + fit.plan.activation.total + fit.plan.runtime.total + kv);
    }
    const LinkSpec fallback = c_.NodeLink(k.nodes.front());
    f.node_link = fallback;
    RooflineInputs ri{mem, packing.tp_link.value_or(fallback), packing.pp_link.value_or(fallback), r_.roofline};
    Expected<std::unique_ptr<RooflineStepModel>> model = RooflineStepModel::Create(ri);
    FP_ASSERT(model.ok());  // memory inputs validated; links have bandwidth (Cluster invariant)
    const int64_t m = p.pp > 1 ? r_.microbatches : 1;
    f.prefill = Time(**model, mem, ri, PhaseShape{r_.prefill_tokens, false, m});
    f.decode = Time(**model, mem, ri, PhaseShape{batch, true, std::min(m, batch)});
    const double gpus = static_cast<double>(f.dp * p.gpus());
    f.prefill_score = gpus * f.prefill.tokens_per_s_per_gpu;
    f.decode_score = gpus * f.decode.tokens_per_s_per_gpu;
    if (r_.batch_rule == BatchRule::kFleetConcurrency) {
      // The fleet holds fleet_sequences at once: replicas beyond them idle.
      const int64_t running = std::min(r_.fleet_sequences, f.dp * batch);
      f.decode_score = static_cast<double>(running) / f.decode.step.seconds();
    }
    return f;
  }

  // One microbatch of `tokens` tokens (decode sequences, or a prefill chunk after `context`
  // tokens of the same prompt): its compute, TP all-reduce and EP all-to-all, all stages.
  struct Microbatch {
    Duration compute;
    Duration tp;
    Duration ep;
    Duration total() const { return compute + tp + ep; }
  };

  Microbatch TimeMicrobatch(const RooflineStepModel& model, const MemoryInputs& mem, const RooflineInputs& ri,
                            bool decode, int64_t tokens, int64_t context) const {
    const ModelSpec& ms = mem.model;
    const Parallelism& p = mem.layout;
    std::vector<StepChunk> chunks;
    if (decode) {
      chunks.assign(static_cast<size_t>(tokens), StepChunk{r_.context - 1, 1, true});
    } else {
      chunks.push_back(StepChunk{context, tokens, false});
    }
    const RooflineBreakdown b = model.Explain(chunks);
    Microbatch mb;
    mb.compute = b.linear + b.attention;
    if (p.tp > 1) {
      mb.tp =
          AllReduceTime(r_.all_reduce, p.tp, BytesFor(kActivationDType, tokens * ms.hidden), LinkCost::Of(ri.tp_link)) *
          (kTpAllReducesPerLayer * ms.layers);
    }
    if (ms.moe && p.ep > 1) {
      const Bytes sent_per_group = BytesFor(kActivationDType, tokens * ms.moe->experts_per_token * ms.hidden) / p.ep;
      mb.ep = AllToAllTime(p.ep, sent_per_group, LinkCost::Of(ri.tp_link)) * (2 * MoeLayers(ms));
    }
    return mb;
  }

  PhaseTiming Time(const RooflineStepModel& model, const MemoryInputs& mem, const RooflineInputs& ri,
                   PhaseShape shape) const {
    const ModelSpec& ms = mem.model;
    const Parallelism& p = mem.layout;
    PhaseTiming t;
    t.tokens = shape.tokens;
    t.tokens_per_microbatch = CeilDiv(shape.tokens, shape.microbatches);
    t.tp_message = BytesFor(kActivationDType, t.tokens_per_microbatch * ms.hidden);
    if (ms.moe) {
      t.routed_assignments = shape.tokens * ms.moe->experts_per_token;
      const Bytes all = BytesFor(kActivationDType, t.routed_assignments * ms.hidden);
      t.ep_dispatch_bytes = all * (p.ep - 1) / p.ep * MoeLayers(ms);
      t.ep_combine_bytes = t.ep_dispatch_bytes;
    }
    // Every stage runs every microbatch (1/pp of its work each); the pipeline fills and
    // drains once with the longest microbatch.
    Duration compute, tp, ep, longest;
    t.microbatches = 0;
    for (int64_t done = 0; done < shape.tokens; done += t.tokens_per_microbatch) {
      ++t.microbatches;
      const int64_t n = std::min(t.tokens_per_microbatch, shape.tokens - done);
      const Microbatch mb = TimeMicrobatch(model, mem, ri, shape.decode, n, done);
      compute += mb.compute;
      tp += mb.tp;
      ep += mb.ep;
      longest = std::max(longest, mb.total());
    }
    t.compute = compute / p.pp;
    t.tp_all_reduce = tp / p.pp;
    t.ep_all_to_all = ep / p.pp;
    if (p.pp > 1) {
      // Each boundary hands over kPpTensorsPerBoundary tensors of the microbatch (vLLM's
      // hidden states and residual), as the kernel-table step model prices them.
      t.pp_boundary_per_token = BytesFor(kActivationDType, ms.hidden) * kPpTensorsPerBoundary;
      t.pp_boundary_per_microbatch = t.tp_message * kPpTensorsPerBoundary;
      t.pp_bubble = longest / p.pp * (p.pp - 1);
      t.pp_handoff = SendRecvTime(t.tp_message, LinkCost::Of(ri.pp_link)) * (kPpTensorsPerBoundary * (p.pp - 1));
    }
    t.step = t.compute + t.tp_all_reduce + t.ep_all_to_all + t.pp_bubble + t.pp_handoff;
    t.tokens_per_s_per_gpu = static_cast<double>(shape.tokens) / t.step.seconds() / static_cast<double>(p.gpus());
    return t;
  }

  const LayoutRequest& r_;
  const Cluster& c_;
  const RuntimeSupport& runtime_;
};

// Best first: score, then the shorter step, fewer GPUs, then the shape.
std::vector<size_t> Rank(const std::vector<FeasibleLayout>& f, bool decode) {
  std::vector<size_t> order(f.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const FeasibleLayout& l = f[i];
    const double score = decode ? l.decode_score : l.prefill_score;
    const Duration step = decode ? l.decode.step : l.prefill.step;
    return std::make_tuple(l.near_miss(), -score, step, l.layout.gpus(), l.layout.tp, l.layout.pp, l.layout.ep, l.gpu);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

PhaseRanking RankPhase(const std::vector<FeasibleLayout>& f, bool decode, double share) {
  PhaseRanking r;
  r.order = Rank(f, decode);
  if (r.order.empty()) return r;
  auto score = [&](size_t i) { return decode ? f[i].decode_score : f[i].prefill_score; };
  const double best = score(r.order.front());
  for (size_t i = 1; i < r.order.size(); ++i) {
    if (f[r.order[i]].near_miss()) continue;  // it cannot hold the operating point
    if (score(r.order[i]) >= (1.0 - share) * best) r.close.push_back(r.order[i]);
  }
  return r;
}

}  // namespace

std::string_view BatchRuleName(BatchRule rule) {
  switch (rule) {
    case BatchRule::kPerReplica:
      return "per-replica";
    case BatchRule::kFleetConcurrency:
      return "fleet-concurrency";
    case BatchRule::kMostThatFit:
      return "most-that-fit";
  }
  return "unknown";
}

Expected<LayoutResult> SearchLayouts(const LayoutRequest& request, const Cluster& cluster,
                                     const LayoutProgressFn& progress) {
  FP_RETURN_IF_ERROR(ValidateRequest(request));
  Expected<std::unique_ptr<RuntimeSupport>> runtime = MakeRuntimeSupport(request.runtime);
  if (!runtime.ok()) return FlagError("--runtime", runtime.status().message());
  LayoutResult out;
  out.request = request;
  out.derived = cluster.derived();
  if (request.microbatches > 1) {
    out.derived.push_back(
        fmt::format("microbatches {} apply to pp > 1 only; pp 1 layouts run 1", request.microbatches));
  }
  const Evaluator eval(request, cluster, **runtime);
  const std::vector<GpuClass> classes = ClassesOf(cluster);
  std::vector<std::pair<size_t, Parallelism>> candidates;
  for (size_t c = 0; c < classes.size(); ++c) {
    for (const int64_t tp : TpCandidates(request, classes[c])) {
      for (const int64_t pp : PpCandidates(request, classes[c], tp)) {
        for (const int64_t ep : EpCandidates(request, tp)) candidates.emplace_back(c, Parallelism{tp, pp, ep});
      }
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    eval.Evaluate(classes[candidates[i].first], candidates[i].second, out);
    if (progress) progress(static_cast<int64_t>(i + 1), static_cast<int64_t>(candidates.size()));
  }
  // Feasible layouts in decode order; both rankings index that order.
  const std::vector<size_t> decode_order = Rank(out.feasible, /*decode=*/true);
  std::vector<FeasibleLayout> sorted;
  sorted.reserve(decode_order.size());
  for (const size_t i : decode_order) sorted.push_back(std::move(out.feasible[i]));
  out.feasible = std::move(sorted);
  out.decode = RankPhase(out.feasible, /*decode=*/true, request.close_call_share);
  out.prefill = RankPhase(out.feasible, /*decode=*/false, request.close_call_share);
  for (size_t pos = 0; pos < out.decode.order.size(); ++pos) {
    out.feasible[out.decode.order[pos]].decode_rank = static_cast<int64_t>(pos) + 1;
  }
  for (size_t pos = 0; pos < out.prefill.order.size(); ++pos) {
    out.feasible[out.prefill.order[pos]].prefill_rank = static_cast<int64_t>(pos) + 1;
  }
  return out;
}

}  // namespace fleetplan
