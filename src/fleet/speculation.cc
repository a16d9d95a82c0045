// engine.speculation: the section reader and the draft's memory and cost (fleet/speculation.h).
#include "fleetplan/fleet/speculation.h"

#include <fmt/format.h>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/evidence/speculation_rounds.h"
#include "fleetplan/memory/weights.h"
#include "fleet/section_readers.h"

namespace fleetplan {
namespace section {
namespace {

const std::vector<std::string> kMethods = {"draft", "ngram"};
const std::vector<std::string> kBases = {"emitted", "accepted"};

Expected<std::vector<double>> DeclaredAcceptance(const YamlNode& node, int64_t k) {
  FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, node.Items());
  if (static_cast<int64_t>(items.size()) != k) {
    return node.Error(fmt::format("expected {} conditional acceptance probabilities (one per drafted position, "
                                  "tokens_per_round is {}), got {}",
                                  k, k, items.size()));
  }
  std::vector<double> p;
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(double v, item.AsDoubleInRange(0.0, 1.0));
    p.push_back(v);
  }
  return p;
}

// The conditional acceptance of the first k positions of a measured rounds file.
Expected<std::vector<double>> MeasuredAcceptance(const YamlNode& node, int64_t k, const Scenario& s,
                                                 std::string& source) {
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kSpeculationAcceptance));
  FP_ASSIGN_OR_RETURN(std::string file, node["rounds"].AsString());
  source = file;
  Expected<SpecRounds> rounds = LoadSpecRounds(ResolveScenarioPath(s.dir, file));
  if (!rounds.ok()) return node["rounds"].Error(rounds.status().message());
  const PositionAcceptance by_position = AcceptanceByPosition(*rounds);
  if (by_position.max_draft < k) {
    return node["rounds"].Error(fmt::format("the rounds drafted at most {} tokens; tokens_per_round {} needs "
                                            "acceptance measured at every position up to {}",
                                            by_position.max_draft, k, k));
  }
  for (int64_t j = 0; j < k; ++j) {
    if (by_position.eligible[static_cast<size_t>(j)] == 0) {
      return node["rounds"].Error(fmt::format("no round reached position {}, so its acceptance is unmeasured; "
                                              "lower tokens_per_round to {}",
                                              j + 1, j));
    }
  }
  return std::vector<double>(by_position.conditional.begin(), by_position.conditional.begin() + k);
}

Status ReadDraft(const YamlNode& node, Scenario& s) {
  SpeculationSpec& spec = s.speculation;
  if (!node.present() || node.IsNull()) {
    return node.Error("method draft needs `draft: {model: NAME}` (the draft model), or use method ngram");
  }
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kSpeculationDraft));
  FP_ASSIGN_OR_RETURN(spec.config.draft_model, node["model"].AsString());
  Expected<ModelSpec> model = s.catalog->Model(spec.config.draft_model);
  if (!model.ok()) return node["model"].Error(model.status().message());
  spec.draft = std::move(*model);
  FP_ASSIGN_OR_RETURN(std::string dtype, node["weight_dtype"].StringOr("bf16"));
  Expected<DType> parsed = ParseDType(dtype);
  if (!parsed.ok()) return node["weight_dtype"].Error(parsed.status().message());
  spec.draft_weight_dtype = *parsed;
  NoteDefault(node["weight_dtype"], "bf16", s);
  const YamlNode step_model = node["step_model"];
  if (step_model.present() && !step_model.IsNull()) {
    spec.draft_step_model = step_model;
  } else {
    s.derived.push_back(fmt::format("{}: roofline of the draft model (not given)", step_model.path()));
  }
  return Status::Ok();
}

}  // namespace

Status ReadSpeculation(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kSpeculation));
  SpeculationSpec& spec = s.speculation;
  SpeculationConfig& c = spec.config;
  spec.where = node;
  FP_ASSIGN_OR_RETURN(c.method, ReadChoice(node["method"], "", "speculation method", kMethods));
  FP_ASSIGN_OR_RETURN(c.tokens_per_round, node["tokens_per_round"].AsIntAtLeast(1));
  if (c.tokens_per_round > kMaxSpeculativeTokens) {
    return node["tokens_per_round"].Error(
        fmt::format("expected at most {} tokens per round, got {}", kMaxSpeculativeTokens, c.tokens_per_round));
  }
  const YamlNode acceptance = node["acceptance"];
  if (acceptance.IsMap()) {
    FP_ASSIGN_OR_RETURN(c.acceptance, MeasuredAcceptance(acceptance, c.tokens_per_round, s, c.acceptance_source));
  } else if (acceptance.IsSequence()) {
    FP_ASSIGN_OR_RETURN(c.acceptance, DeclaredAcceptance(acceptance, c.tokens_per_round));
    c.acceptance_source = "declared";
  } else {
    return acceptance.Error("expected the conditional acceptance by position ([0.8, 0.6, ...]) or "
                            "{rounds: FILE} (a measured rounds file)");
  }
  if (node["disable_above_batch"].present()) {
    FP_ASSIGN_OR_RETURN(int64_t n, node["disable_above_batch"].AsIntAtLeast(1));
    c.disable_above_batch = n;
  }
  FP_ASSIGN_OR_RETURN(c.min_remaining, node["min_remaining"].IntOr(2));
  if (c.min_remaining < 2) {
    return node["min_remaining"].Error(fmt::format(
        "expected an integer >= 2 (a request with one token left has nothing to draft), got {}", c.min_remaining));
  }
  NoteDefault(node["min_remaining"], "2", s);
  FP_ASSIGN_OR_RETURN(std::string basis, ReadChoice(node["basis"], "emitted", "speculation cost basis", kBases));
  c.basis = *ParseSpeculationBasis(basis);
  NoteDefault(node["basis"], "emitted", s);
  if (c.method == "draft") {
    FP_RETURN_IF_ERROR(ReadDraft(node["draft"], s));
  } else if (node["draft"].present()) {
    return node["draft"].Error("method ngram drafts from the request's own tokens: it takes no draft model");
  }
  int64_t pp = s.fit.memory.layout.pp;
  for (const PoolSpec& p : s.pools) pp = std::max(pp, p.fit.memory.layout.pp);
  if (pp > 1) return node.Error(fmt::format("speculation runs on one pipeline stage; this layout has pp {}", pp));
  if (HasPrefillPool(s)) {
    return node.Error("speculation with a prefill pool is not simulated: declare it on a fleet without "
                      "deployment.pools prefill");
  }
  return Status::Ok();
}

}  // namespace section

Expected<BoundDraft> BindDraft(const SpeculationSpec& spec, const MemoryInputs& target, const KvPoolSize& kv,
                               const StepModelContext& target_ctx) {
  FP_ASSERT(spec.draft && spec.where);
  const YamlNode& where = *spec.where;
  MemoryInputs draft = target;
  draft.model = *spec.draft;
  draft.weight_dtype = spec.draft_weight_dtype;
  draft.layout = Parallelism{target.layout.tp, 1, 1};
  if (const std::optional<FieldError> e = ValidateMemoryInputs(draft)) {
    return where["draft"]["model"].Error(fmt::format("the draft {} sharded tp {} like the target: {}: {}",
                                                     draft.model.name, draft.layout.tp,
                                                     MemoryFieldName(e->field), e->message));
  }
  BoundDraft out;
  out.memory.weights_per_rank = PlanWeights(draft).bytes_per_rank.front();
  FP_ASSIGN_OR_RETURN(KvPoolSize draft_kv, SizeKvPool(draft));
  out.memory.kv_per_token_per_rank = draft_kv.kv_bytes_per_token_per_rank;
  out.memory.kv_blocks_before = kv.kv_blocks_per_replica;
  const Bytes usable = kv.kv_bytes_per_rank - out.memory.weights_per_rank;
  const Bytes block = (kv.kv_bytes_per_token_per_rank + out.memory.kv_per_token_per_rank) * kv.block_tokens;
  out.memory.kv_blocks_after = usable.count() > 0 && block.count() > 0 ? usable.count() / block.count() : 0;
  if (out.memory.kv_blocks_after < 1) {
    return where["draft"]["model"].Error(fmt::format(
        "the draft {} takes {:.2f} GiB of weights per rank and leaves no KV block (usable KV per rank {:.2f} GiB)",
        draft.model.name, out.memory.weights_per_rank.gib(), kv.kv_bytes_per_rank.gib()));
  }
  StepModelContext ctx = target_ctx;
  ctx.memory = draft;
  ctx.cuda_graphs = CudaGraphPolicy();
  std::unique_ptr<StepCostModel> model;
  if (spec.draft_step_model) {
    FP_ASSIGN_OR_RETURN(model, MakeStepCostModel(*spec.draft_step_model, ctx));
  } else {
    FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString("{kind: roofline}", "<default draft step model>"));
    FP_ASSIGN_OR_RETURN(model, MakeStepCostModel(doc.root(), ctx));
  }
  out.cost = std::shared_ptr<const StepCostModel>(std::move(model));
  return out;
}

}  // namespace fleetplan
