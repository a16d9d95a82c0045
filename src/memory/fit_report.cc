#include "fleetplan/memory/fit_report.h"

#include <fmt/format.h>

#include "memory/text.h"

namespace fleetplan {
namespace {

using memory_text::Count;
using memory_text::Gib;
using memory_text::GibExact;
using memory_text::Human;
using memory_text::Params;
using memory_text::TextTable;

constexpr std::string_view kIndent = "  ";

// Derived lines longer than this are wrapped after a comma, so the header stays narrow.
constexpr size_t kWrapColumns = 90;

// Splits `text` after ", " so that each piece is at most `width` bytes where possible.
std::vector<std::string> Wrap(const std::string& text, size_t width) {
  std::vector<std::string> out;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t cut = text.find(", ", start);
    cut = cut == std::string::npos ? text.size() : cut + 2;
    std::string piece = text.substr(start, cut - start);
    if (!line.empty() && line.size() + piece.size() > width) {
      line.pop_back();  // the space after the comma
      out.push_back(line);
      line.clear();
    }
    line += piece;
    start = cut;
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

std::string Bits(DType t) { return fmt::format("{} ({} bits)", DTypeName(t), BitsPerElement(t)); }

const StagePlan& BindingStage(const FitResult& r) {
  return r.plan.stages.at(static_cast<size_t>(r.binding_stage));
}

std::string StageNote(const FitResult& r) {
  if (r.plan.inputs.layout.pp == 1) return "";
  const StageLayers& l = BindingStage(r).layers;
  return fmt::format(" (stage {}: layers {}..{})", l.stage, l.first_layer,
                     l.first_layer + l.layers - 1);
}

// ---- text ---------------------------------------------------------------------------

std::string Header(const FitResult& r, std::span<const std::string> derived) {
  const MemoryInputs& in = r.plan.inputs;
  std::string out = fmt::format(
      "fleetplan fit: {} on {} ({} each), tp {} × pp {} = {} per replica{}\n", in.model.name,
      in.gpu.name, Gib(in.gpu.memory), in.layout.tp, in.layout.pp, Count(in.layout.gpus(), "GPU"),
      in.layout.ep > 1 ? fmt::format(", ep {}", in.layout.ep) : "");
  TextTable t({false, false});
  t.Row({"target", fmt::format("{} of {} tokens", Count(r.request.concurrency, "sequence"),
                               r.request.context)});
  t.Row({"formats", fmt::format("weights {}, KV {}; KV paged in blocks of {} tokens",
                                Bits(in.weight_dtype), Bits(in.kv_dtype), in.block_tokens)});
  bool first = true;
  for (const std::string& line : derived) {
    for (const std::string& part : Wrap(line, kWrapColumns)) {
      t.Row({first ? "derived" : "", part});
      first = false;
    }
  }
  return out + t.Render(kIndent);
}

std::string WeightsSection(const FitResult& r) {
  const MemoryInputs& in = r.plan.inputs;
  const WeightsPlan& w = r.plan.weights;
  const int64_t pp = in.layout.pp;
  std::vector<bool> right = {false, false, true, true};
  std::vector<std::string> head = {"term", "dtype", "params", "whole model"};
  for (int64_t s = 0; s < pp; ++s) {
    right.push_back(true);
    head.push_back(pp == 1 ? "per rank" : fmt::format("stage {}/rank", s));
  }
  right.push_back(false);
  head.push_back("split");
  TextTable t(right);
  t.Row(head);
  for (const WeightTerm& term : w.terms) {
    std::vector<std::string> row = {term.name, std::string(DTypeName(term.dtype)),
                                    Params(term.params), GibExact(term.bytes)};
    for (Bytes b : term.bytes_per_rank) row.push_back(Gib(b));
    row.push_back(term.sharding);
    t.Row(row);
  }
  std::vector<std::string> total = {"total", "", Params(w.params_total), GibExact(w.bytes_total)};
  for (Bytes b : w.bytes_per_rank) total.push_back(Gib(b));
  t.Row(total);
  std::string out = "\nWEIGHTS  bytes = params × bits / 8; per rank = the rank's share of each term\n";
  out += t.Render(kIndent);
  out += fmt::format("{}replica holds {} across its {} (shards + replicated parts)\n", kIndent,
                     GibExact(w.replica_bytes), Count(in.layout.gpus(), "GPU"));
  if (in.model.moe) {
    out += fmt::format("{}MoE: {} resident; active per token {} params = {} (top-{} of {} routed "
                       "experts)\n",
                       kIndent, Gib(w.bytes_total), Params(w.active_params_per_token),
                       Gib(w.active_bytes_per_token), in.model.moe->experts_per_token,
                       in.model.moe->experts);
  }
  if (in.model.vision) {
    out += fmt::format("{}VLM: decoder {}, vision encoder {}, vision projector {}\n", kIndent,
                       Gib(w.decoder_bytes), Gib(w.vision_encoder_bytes),
                       Gib(w.vision_projector_bytes));
  }
  for (const std::string& note : w.notes) out += fmt::format("{}note: {}\n", kIndent, note);
  return out;
}

// "× 2 B" for whole-byte formats, "× 4 bits / 8" for packed ones.
std::string ElementSize(DType t) {
  const int bits = BitsPerElement(t);
  if (bits % 8 == 0) return fmt::format("× {} B", bits / 8);
  return fmt::format("× {} bits / 8", bits);
}

std::string PerLayerFormula(const FitResult& r) {
  const ModelSpec& m = r.plan.inputs.model;
  const KvShape& kv = r.plan.kv;
  if (kv.latent) {
    return fmt::format("MLA latent {} + RoPE key {} = {} elements", m.mla->kv_lora_rank,
                       m.mla->qk_rope_head_dim, kv.elements_per_layer);
  }
  return fmt::format("2 (K, V) × {} KV heads × {} head_dim = {} elements", m.kv_heads, m.head_dim,
                     kv.elements_per_layer);
}

std::string PerRankLayerFormula(const FitResult& r) {
  const ModelSpec& m = r.plan.inputs.model;
  const KvShape& kv = r.plan.kv;
  if (kv.latent) return fmt::format("whole latent on every rank: {} elements", kv.elements_per_layer);
  return fmt::format("2 × {} KV heads/rank × {} = {} elements", kv.kv_heads_per_rank, m.head_dim,
                     kv.elements_per_layer_per_rank);
}

// One line per kind of layer: what it keeps of a sequence.
std::vector<std::string> WindowsText(const FitResult& r) {
  const MemoryInputs& in = r.plan.inputs;
  const KvWindows& w = r.sequence.windows;
  const int64_t global = GlobalLayers(in.model);
  const int64_t windowed = in.model.layers - global;
  std::string g = in.kv_window ? fmt::format("min(context {}, kv_window {}) = {} tokens", w.context,
                                             *in.kv_window, w.global_tokens)
                               : fmt::format("the whole context, {} tokens", w.context);
  if (windowed == 0) return {fmt::format("all {} layers keep {}", in.model.layers, g)};
  return {fmt::format("{} global layers keep {}", global, g),
          fmt::format("{} sliding-window layers keep min(context, window {}{}) = {} tokens",
                      windowed, in.model.sliding_window,
                      in.kv_window ? fmt::format(", kv_window {}", *in.kv_window) : "",
                      w.windowed_tokens)};
}

// "(G × g + W × w) layer-tokens" or "L layers × g tokens" for stage layers.
std::string LayerTokens(int64_t global_layers, int64_t windowed_layers, const KvWindows& w) {
  if (windowed_layers == 0) return fmt::format("{} layers × {} tokens", global_layers, w.global_tokens);
  return fmt::format("({} × {} + {} × {}) layer-tokens", global_layers, w.global_tokens,
                     windowed_layers, w.windowed_tokens);
}

// "80 layers × 2048 blocks" or "(G × gb + W × wb) layer-blocks" (LayerBlocks in kv.h).
std::string LayerBlocksFormula(const FitResult& r, const StageLayers& layers) {
  const KvWindows& w = r.sequence.windows;
  const int64_t bt = r.plan.inputs.block_tokens;
  const int64_t global = LayerBlocks(w.context, w.global_tokens, bt);
  if (layers.windowed_layers == 0) {
    return fmt::format("{} layers × {} blocks", layers.global_layers, global);
  }
  return fmt::format("({} × {} + {} × {}) layer-blocks", layers.global_layers, global,
                     layers.windowed_layers, LayerBlocks(w.context, w.windowed_tokens, bt));
}

std::string KvSection(const FitResult& r) {
  const MemoryInputs& in = r.plan.inputs;
  const KvShape& kv = r.plan.kv;
  const StagePlan& st = BindingStage(r);
  const auto s = static_cast<size_t>(r.binding_stage);
  const KvWindows& w = r.sequence.windows;
  const int64_t all_global = GlobalLayers(in.model);
  TextTable t({false, false, true});
  t.Row({"per token per layer", fmt::format("{} {}", PerLayerFormula(r), ElementSize(in.kv_dtype)),
         fmt::format("{} B", kv.bytes_per_layer.count())});
  t.Row({"per token", fmt::format("× {} layers", in.model.layers),
         fmt::format("{} ({} B)", Human(kv.bytes_per_token), kv.bytes_per_token.count())});
  t.Row({"per token per rank",
         fmt::format("{} {} = {} B × {} layers{}", PerRankLayerFormula(r),
                     ElementSize(in.kv_dtype), kv.bytes_per_layer_per_rank.count(),
                     st.layers.layers, StageNote(r)),
         fmt::format("{} ({} B)", Human(st.kv_bytes_per_token), st.kv_bytes_per_token.count())});
  t.Row({"per sequence",
         fmt::format("{} × {} B",
                     LayerTokens(all_global, in.model.layers - all_global, w),
                     kv.bytes_per_layer.count()),
         GibExact(r.sequence.bytes)});
  t.Row({"per sequence per rank",
         fmt::format("{} × {} B", LayerTokens(st.layers.global_layers, st.layers.windowed_layers, w),
                     kv.bytes_per_layer_per_rank.count()),
         GibExact(r.sequence.bytes_per_rank[s])});
  t.Row({"reserved per rank",
         fmt::format("{} × {} tokens × {} B (whole blocks)", LayerBlocksFormula(r, st.layers),
                     in.block_tokens, kv.bytes_per_layer_per_rank.count()),
         GibExact(r.sequence.reserved_bytes_per_rank[s])});
  std::string out = fmt::format("\nKV CACHE  {} at context {}\n", Bits(in.kv_dtype), w.context);
  out += t.Render(kIndent);
  const std::vector<std::string> windows = WindowsText(r);
  for (size_t i = 0; i < windows.size(); ++i) {
    out += fmt::format("{}{}{}\n", kIndent, i == 0 ? "window: " : "        ", windows[i]);
  }
  if (kv.latent && in.layout.tp > 1) {
    out += fmt::format("{}note: MLA latent KV is not sharded by TP: each of the {} ranks of a "
                       "stage holds the whole latent\n",
                       kIndent, in.layout.tp);
  } else if (kv.replication > 1) {
    out += fmt::format("{}note: tp {} > {} KV heads: each rank holds 1 KV head, each head "
                       "replicated on {} ranks\n",
                       kIndent, in.layout.tp, in.model.kv_heads, kv.replication);
  } else if (!kv.latent && in.layout.tp > 1) {
    out += fmt::format("{}note: {} KV heads / tp {} = {} per rank\n", kIndent, in.model.kv_heads,
                       in.layout.tp, Count(kv.kv_heads_per_rank, "KV head"));
  }
  return out;
}

std::string ActivationFormula(const ActivationWorkspace& a, int64_t vocab) {
  return fmt::format("{} tokens × {} B + logits {} × {} vocab × {} B", a.tokens,
                     a.per_token.count(), a.logits_rows, vocab, kLogitsElementBytes);
}

std::string RuntimeFormula(const RuntimeOverhead& o) {
  std::string f = fmt::format("CUDA context {} + CUDA graphs {}", Human(o.cuda_context),
                              Human(o.cuda_graphs));
  if (o.collectives.count() > 0) f += fmt::format(" + NCCL/all-reduce {}", Human(o.collectives));
  return f;
}

std::string StagesTable(const FitResult& r) {
  TextTable t({false, false, true, true, true, true});
  t.Row({"stage", "layers", "weights/rank", "KV usable/rank", "KV blocks", "sequences"});
  for (const StagePlan& st : r.plan.stages) {
    const auto s = static_cast<size_t>(st.layers.stage);
    const int64_t seqs = st.usable_kv.count() > 0
                             ? st.usable_kv.count() / r.sequence.reserved_bytes_per_rank[s].count()
                             : 0;
    t.Row({fmt::format("{}", st.layers.stage),
           fmt::format("{}..{}", st.layers.first_layer, st.layers.first_layer + st.layers.layers - 1),
           Gib(st.weights), Gib(st.usable_kv), fmt::format("{}", st.kv_blocks),
           fmt::format("{}", seqs)});
  }
  return t.Render(kIndent);
}

std::string CapacitySection(const FitResult& r) {
  const MemoryInputs& in = r.plan.inputs;
  const MemoryPlan& p = r.plan;
  const StagePlan& st = BindingStage(r);
  const auto s = static_cast<size_t>(r.binding_stage);
  const ActivationWorkspace& a = p.activation;
  TextTable t({false, false, true});
  t.Row({"budget", fmt::format("{} × {} gpu_memory_utilization", Gib(in.gpu.memory),
                               in.gpu_memory_utilization),
         GibExact(p.budget_per_rank)});
  t.Row({"− weights", "per rank, above", GibExact(st.weights)});
  t.Row({"− activation", ActivationFormula(a, in.model.vocab), GibExact(a.total)});
  t.Row({"", fmt::format("per token {} B × ({} × {} hidden + {} widest)", a.element_bytes,
                         kActivationHiddenBuffers, in.model.hidden, a.widest_elements),
         ""});
  t.Row({"− runtime", RuntimeFormula(p.runtime), GibExact(p.runtime.total)});
  t.Row({"= KV usable", "", GibExact(st.usable_kv)});
  t.Row({"KV blocks",
         fmt::format("usable / ({} tokens × {} = {} per block)", in.block_tokens,
                     Human(st.kv_bytes_per_token), Human(st.block_bytes)),
         fmt::format("{} blocks = {} tokens", st.kv_blocks, st.kv_blocks * in.block_tokens)});
  t.Row({"max sequences",
         fmt::format("usable / {} reserved per sequence at context {}",
                     Gib(r.sequence.reserved_bytes_per_rank[s]), r.request.context),
         fmt::format("{}", r.max_sequences)});
  std::string out = fmt::format("\nCAPACITY PER RANK{}\n", StageNote(r));
  out += t.Render(kIndent);
  out += fmt::format("{}widest per-token intermediate: {} = {} elements\n", kIndent,
                     a.widest_formula, a.widest_elements);
  if (in.layout.pp > 1) {
    out += fmt::format("{}per stage (a block spans every stage: blocks per replica = min = {}):\n",
                       kIndent, p.kv_blocks_per_replica);
    out += StagesTable(r);
  } else {
    out += fmt::format("{}blocks per replica: {} (all ranks of a stage hold the same)\n", kIndent,
                       p.kv_blocks_per_replica);
  }
  return out;
}

std::string DTypeFlag(std::string_view flag, DType t) { return fmt::format("{} {}", flag, DTypeName(t)); }

// One row: the flag with its passing value (or "(none)") and what it gives.
void NearestRow(TextTable& t, std::string_view flag, const std::optional<FitPoint>& p,
                const std::string& value, const std::string& none) {
  if (!p) {
    t.Row({fmt::format("{} (none)", flag), none});
    return;
  }
  t.Row({value, fmt::format("{} of {} tokens fit", Count(p->max_sequences, "sequence"),
                            p->context)});
}

std::string NearestSection(const FitResult& r) {
  const NearestPassing& n = r.nearest;
  const MemoryInputs& in = r.plan.inputs;
  TextTable t({false, false});
  NearestRow(t, "--context", n.context,
             n.context ? fmt::format("--context {}", n.context->context) : "",
             fmt::format("no context fits {}", Count(r.request.concurrency, "sequence")));
  if (r.max_sequences > 0) {
    t.Row({fmt::format("--concurrency {}", r.max_sequences),
           fmt::format("most sequences at context {}", r.request.context)});
  } else {
    t.Row({"--concurrency (none)", fmt::format("not one sequence fits at context {}",
                                                r.request.context)});
  }
  NearestRow(t, "--tp", n.tp, n.tp ? fmt::format("--tp {}", n.tp->tp) : "",
             "no valid tp fits with the other values unchanged");
  NearestRow(t, "--kv-dtype", n.kv_dtype,
             n.kv_dtype ? DTypeFlag("--kv-dtype", n.kv_dtype->kv_dtype) : "",
             fmt::format("no KV format narrower than {} fits", DTypeName(in.kv_dtype)));
  NearestRow(t, "--weight-dtype", n.weight_dtype,
             n.weight_dtype ? DTypeFlag("--weight-dtype", n.weight_dtype->weight_dtype) : "",
             fmt::format("no weight format narrower than {} fits", DTypeName(in.weight_dtype)));
  if (!n.tp && !n.kv_dtype) {
    NearestRow(t, "--tp with --kv-dtype", n.tp_and_kv_dtype,
               n.tp_and_kv_dtype ? fmt::format("--tp {} --kv-dtype {}", n.tp_and_kv_dtype->tp,
                                               DTypeName(n.tp_and_kv_dtype->kv_dtype))
                                 : "",
               "no valid tp with a narrower KV format fits");
  }
  return "\nNEAREST PASSING VALUES  (each searched and re-checked with the whole computation)\n" +
         t.Render(kIndent);
}

std::string VerdictSection(const FitResult& r) {
  std::string out;
  if (r.fits) {
    const auto s = static_cast<size_t>(r.binding_stage);
    const double need = r.sequence.reserved_bytes_per_rank[s].gib() *
                        static_cast<double>(r.request.concurrency);
    return fmt::format("\nVERDICT  fits: {} × {} = {:.2f} GiB of {} KV per rank; up to {} fit "
                       "at context {}\n",
                       Count(r.request.concurrency, "sequence"),
                       Gib(r.sequence.reserved_bytes_per_rank[s]), need,
                       Gib(BindingStage(r).usable_kv), Count(r.max_sequences, "sequence"),
                       r.request.context);
  }
  out = fmt::format("\nVERDICT  does not fit; binding constraint: {}\n",
                    BindingConstraintName(r.binding));
  for (const std::string& reason : r.reasons) out += fmt::format("{}- {}\n", kIndent, reason);
  return out + NearestSection(r);
}

// ---- JSON ---------------------------------------------------------------------------

Json BytesList(const std::vector<Bytes>& v) {
  Json out = Json::array();
  for (Bytes b : v) out.push_back(b.count());
  return out;
}

Json InputsJson(const FitResult& r) {
  const MemoryInputs& in = r.plan.inputs;
  return Json{{"model", in.model.name},
              {"gpu", in.gpu.name},
              {"gpu_memory_bytes", in.gpu.memory.count()},
              {"tp", in.layout.tp},
              {"pp", in.layout.pp},
              {"ep", in.layout.ep},
              {"gpus_per_replica", in.layout.gpus()},
              {"weight_dtype", DTypeName(in.weight_dtype)},
              {"kv_dtype", DTypeName(in.kv_dtype)},
              {"kv_window", in.kv_window ? Json(*in.kv_window) : Json(nullptr)},
              {"context", r.request.context},
              {"concurrency", r.request.concurrency},
              {"gpu_memory_utilization", in.gpu_memory_utilization},
              {"block_tokens", in.block_tokens},
              {"max_batched_tokens", in.max_batched_tokens}};
}

Json WeightsJson(const FitResult& r) {
  const WeightsPlan& w = r.plan.weights;
  Json terms = Json::array();
  for (const WeightTerm& t : w.terms) {
    terms.push_back(Json{{"name", t.name},
                         {"dtype", DTypeName(t.dtype)},
                         {"sharding", t.sharding},
                         {"params", t.params},
                         {"bytes", t.bytes.count()},
                         {"params_per_rank_by_stage", t.params_per_rank},
                         {"bytes_per_rank_by_stage", BytesList(t.bytes_per_rank)}});
  }
  return Json{{"bytes_total", w.bytes_total.count()},
              {"bytes_per_rank", BindingStage(r).weights.count()},
              {"bytes_per_rank_by_stage", BytesList(w.bytes_per_rank)},
              {"params_total", w.params_total},
              {"replica_bytes", w.replica_bytes.count()},
              {"active_params_per_token", w.active_params_per_token},
              {"active_bytes_per_token", w.active_bytes_per_token.count()},
              {"decoder_bytes", w.decoder_bytes.count()},
              {"vision_encoder_bytes", w.vision_encoder_bytes.count()},
              {"vision_projector_bytes", w.vision_projector_bytes.count()},
              {"terms", terms},
              {"notes", w.notes}};
}

Json KvJson(const FitResult& r) {
  const KvShape& kv = r.plan.kv;
  const StagePlan& st = BindingStage(r);
  const auto s = static_cast<size_t>(r.binding_stage);
  const ModelSpec& m = r.plan.inputs.model;
  return Json{{"dtype", DTypeName(r.plan.inputs.kv_dtype)},
              {"latent", kv.latent},
              {"elements_per_token_per_layer", kv.elements_per_layer},
              {"elements_per_token_per_layer_per_rank", kv.elements_per_layer_per_rank},
              {"kv_heads_per_rank", kv.kv_heads_per_rank},
              {"replication", kv.replication},
              {"bytes_per_token_per_layer", kv.bytes_per_layer.count()},
              {"bytes_per_token_per_layer_per_rank", kv.bytes_per_layer_per_rank.count()},
              {"bytes_per_token", kv.bytes_per_token.count()},
              {"bytes_per_token_per_rank", st.kv_bytes_per_token.count()},
              {"bytes_per_sequence", r.sequence.bytes.count()},
              {"bytes_per_sequence_per_rank", r.sequence.bytes_per_rank[s].count()},
              {"reserved_bytes_per_sequence_per_rank", r.sequence.reserved_bytes_per_rank[s].count()},
              {"layer_blocks_per_sequence_per_rank", r.sequence.layer_blocks_per_rank[s]},
              {"window_tokens", r.sequence.windows.global_tokens},
              {"windowed_layer_tokens", r.sequence.windows.windowed_tokens},
              {"global_layers", GlobalLayers(m)},
              {"windowed_layers", m.layers - GlobalLayers(m)}};
}

Json StagesJson(const FitResult& r) {
  Json out = Json::array();
  for (const StagePlan& st : r.plan.stages) {
    const auto s = static_cast<size_t>(st.layers.stage);
    out.push_back(Json{{"stage", st.layers.stage},
                       {"first_layer", st.layers.first_layer},
                       {"layers", st.layers.layers},
                       {"global_layers", st.layers.global_layers},
                       {"windowed_layers", st.layers.windowed_layers},
                       {"weights_bytes_per_rank", st.weights.count()},
                       {"kv_bytes_per_token_per_rank", st.kv_bytes_per_token.count()},
                       {"kv_bytes_per_rank", st.usable_kv.count()},
                       {"kv_blocks_per_rank", st.kv_blocks},
                       {"reserved_bytes_per_sequence_per_rank",
                        r.sequence.reserved_bytes_per_rank[s].count()}});
  }
  return out;
}

Json CapacityJson(const FitResult& r) {
  const MemoryPlan& p = r.plan;
  const StagePlan& st = BindingStage(r);
  const ActivationWorkspace& a = p.activation;
  return Json{
      {"budget_bytes_per_rank", p.budget_per_rank.count()},
      {"weights_bytes_per_rank", st.weights.count()},
      {"activation",
       Json{{"bytes", a.total.count()},
            {"tokens", a.tokens},
            {"bytes_per_token", a.per_token.count()},
            {"element_bytes", a.element_bytes},
            {"hidden_elements", a.hidden_elements},
            {"widest_elements", a.widest_elements},
            {"widest_formula", a.widest_formula},
            {"logits_rows", a.logits_rows},
            {"logits_bytes", a.logits.count()}}},
      {"runtime",
       Json{{"bytes", p.runtime.total.count()},
            {"cuda_context_bytes", p.runtime.cuda_context.count()},
            {"cuda_graphs_bytes", p.runtime.cuda_graphs.count()},
            {"collectives_bytes", p.runtime.collectives.count()}}},
      {"kv_bytes_per_rank", st.usable_kv.count()},
      {"block_tokens", p.inputs.block_tokens},
      {"block_bytes_per_rank", st.block_bytes.count()},
      {"kv_blocks_per_rank", st.kv_blocks},
      {"kv_tokens_per_rank", st.kv_blocks * p.inputs.block_tokens},
      {"kv_blocks_per_replica", p.kv_blocks_per_replica},
      {"max_sequences", r.max_sequences},
      {"binding_stage", r.binding_stage},
      {"stages", StagesJson(r)}};
}

Json PointJson(const std::optional<FitPoint>& p) {
  if (!p) return nullptr;
  return Json{{"tp", p->tp},
              {"weight_dtype", DTypeName(p->weight_dtype)},
              {"kv_dtype", DTypeName(p->kv_dtype)},
              {"context", p->context},
              {"concurrency", p->concurrency},
              {"max_sequences", p->max_sequences}};
}

Json NearestJson(const FitResult& r) {
  if (r.fits) return nullptr;
  const NearestPassing& n = r.nearest;
  return Json{{"context", PointJson(n.context)},
              {"concurrency", r.max_sequences},
              {"tp", PointJson(n.tp)},
              {"kv_dtype", PointJson(n.kv_dtype)},
              {"weight_dtype", PointJson(n.weight_dtype)},
              {"tp_and_kv_dtype", PointJson(n.tp_and_kv_dtype)}};
}

}  // namespace

std::string FitReportText(const FitResult& r, std::span<const std::string> derived) {
  return Header(r, derived) + WeightsSection(r) + KvSection(r) + CapacitySection(r) +
         VerdictSection(r);
}

Json FitReportJson(const FitResult& r, std::span<const std::string> derived) {
  Json reasons = Json::array();
  for (const std::string& reason : r.reasons) reasons.push_back(reason);
  return Json{{"inputs", InputsJson(r)},
              {"derived", std::vector<std::string>(derived.begin(), derived.end())},
              {"weights", WeightsJson(r)},
              {"kv", KvJson(r)},
              {"capacity", CapacityJson(r)},
              {"fits", r.fits},
              {"binding_constraint", BindingConstraintName(r.binding)},
              {"reasons", reasons},
              {"nearest", NearestJson(r)}};
}

}  // namespace fleetplan
