#include "fleetplan/gates/speculation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/core/units_parse.h"
#include "gates/fit_section.h"

namespace fleetplan {

namespace {

double RoundMs(const SpecRound& r) { return (r.draft_time + r.verify_time).millis(); }

double Ratio(int64_t num, int64_t den) {
  return den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den);
}

}  // namespace

SpecAnalysis AnalyzeRounds(const SpecRounds& rounds, double ordinary_ms) {
  FP_ASSERT(!rounds.rounds.empty() && ordinary_ms > 0);
  SpecAnalysis a;
  a.rounds = static_cast<int64_t>(rounds.rounds.size());
  Duration total;
  std::vector<double> costs;
  costs.reserve(rounds.rounds.size());
  for (const SpecRound& r : rounds.rounds) {
    a.max_draft = std::max(a.max_draft, static_cast<int64_t>(r.draft.size()));
  }
  for (const SpecRound& r : rounds.rounds) {
    const int64_t acc = AcceptedTokens(r);
    a.drafted += static_cast<int64_t>(r.draft.size());
    a.accepted += acc;
    a.emitted += acc + 1;
    total += r.draft_time + r.verify_time;
    costs.push_back(RoundMs(r));
    if (r.batch) a.max_batch = std::max(a.max_batch, *r.batch);
    if (!r.error.empty()) {
      ++a.error_rounds;
      if (a.first_error_line == 0) a.first_error_line = r.line;
    }
  }
  a.mean_accepted = Ratio(a.accepted, a.rounds);
  a.mean_emitted = Ratio(a.emitted, a.rounds);
  a.acceptance_rate = Ratio(a.accepted, a.drafted);
  a.total_ms = total.millis();
  a.mean_round_ms = a.total_ms / static_cast<double>(a.rounds);
  if (a.accepted > 0) a.cost_per_accepted_ms = a.total_ms / static_cast<double>(a.accepted);
  a.cost_per_emitted_ms = a.total_ms / static_cast<double>(a.emitted);
  std::sort(costs.begin(), costs.end());
  a.round_p50_ms = NearestRank(costs, 0.5);
  a.round_p95_ms = NearestRank(costs, 0.95);
  PositionAcceptance by_position = AcceptanceByPosition(rounds);
  a.conditional = std::move(by_position.conditional);
  a.cumulative = std::move(by_position.cumulative);
  a.break_even_accepted = a.mean_round_ms / ordinary_ms - 1;
  return a;
}

PairedComparison ComparePaired(const SpecRounds& first, const SpecRounds& second, uint64_t seed) {
  struct Token {
    double cost_ms;
    int64_t id;  // -1 when unknown (the bonus token of a fully accepted round)
  };
  using Key = std::pair<std::string, int64_t>;
  auto tokens_of = [](const SpecRounds& f) {
    std::map<Key, Token> out;
    std::map<std::string, int64_t> next_position;
    for (const SpecRound& r : f.rounds) {
      const int64_t acc = AcceptedTokens(r);
      const double per_token = RoundMs(r) / static_cast<double>(acc + 1);
      int64_t& pos = next_position[r.seq];
      for (int64_t i = 0; i <= acc; ++i) {
        const int64_t id = i < static_cast<int64_t>(r.target.size()) ? r.target[static_cast<size_t>(i)] : -1;
        out[{r.seq, pos + i}] = Token{per_token, id};
      }
      pos += acc + 1;
    }
    return out;
  };
  const std::map<Key, Token> a = tokens_of(first);
  const std::map<Key, Token> b = tokens_of(second);

  PairedComparison c;
  // Per sequence (in key order): Σ(cost_a - cost_b), Σcost_a, Σcost_b, pairs.
  struct SeqSum {
    double diff = 0, first = 0, second = 0;
    int64_t n = 0;
  };
  std::vector<SeqSum> seqs;
  std::string current;
  bool any = false;
  for (const auto& [key, ta] : a) {
    auto it = b.find(key);
    if (it == b.end()) continue;
    const Token& tb = it->second;
    if (ta.id >= 0 && tb.id >= 0 && ta.id != tb.id) {
      ++c.mismatches;
      continue;
    }
    if (!any || key.first != current) {
      seqs.emplace_back();
      current = key.first;
      any = true;
    }
    SeqSum& s = seqs.back();
    s.diff += ta.cost_ms - tb.cost_ms;
    s.first += ta.cost_ms;
    s.second += tb.cost_ms;
    ++s.n;
  }
  c.sequences = static_cast<int64_t>(seqs.size());
  double diff = 0, fa = 0, fb = 0;
  for (const SeqSum& s : seqs) {
    diff += s.diff;
    fa += s.first;
    fb += s.second;
    c.pairs += s.n;
  }
  if (c.pairs == 0) {
    c.reason = fmt::format("no emitted token is in both files (paired by seq and position; {} mismatched ids)",
                           c.mismatches);
    return c;
  }
  const double n = static_cast<double>(c.pairs);
  c.mean_diff_ms = diff / n;
  c.first_ms = fa / n;
  c.second_ms = fb / n;
  if (c.sequences < kMinPairedSequences) {
    c.reason = fmt::format("{} paired sequence(s); the paired bootstrap resamples sequences and needs at least {}",
                           c.sequences, kMinPairedSequences);
    return c;
  }
  RngStream rng(seed, "gate.speculation.bootstrap");
  std::vector<double> stats;
  stats.reserve(kBootstrapResamples);
  const uint64_t m = static_cast<uint64_t>(seqs.size());
  for (int k = 0; k < kBootstrapResamples; ++k) {
    double d = 0;
    int64_t cnt = 0;
    for (uint64_t i = 0; i < m; ++i) {
      const SeqSum& s = seqs[rng.NextBelow(m)];
      d += s.diff;
      cnt += s.n;
    }
    stats.push_back(d / static_cast<double>(cnt));
  }
  std::sort(stats.begin(), stats.end());
  c.low_ms = NearestRank(stats, 0.025);
  c.high_ms = NearestRank(stats, 0.975);
  c.decision = GateDecision::kPass;
  if (c.high_ms < 0) {
    c.winner = "first";
  } else if (c.low_ms > 0) {
    c.winner = "second";
  } else {
    c.winner = "tie";
  }
  c.reason = fmt::format("first - second = {:.4g} ms per emitted token, 95% interval [{:.4g}, {:.4g}] over {} "
                         "paired tokens in {} sequences: {}",
                         c.mean_diff_ms, c.low_ms, c.high_ms, c.pairs, c.sequences,
                         c.winner == "tie" ? "a tie (the interval contains 0)"
                                           : fmt::format("the {} draft is cheaper", c.winner));
  return c;
}

Expected<SpecPolicy> ReadSpecPolicy(const YamlNode& root) {
  SpecPolicy p;
  if (!root.present() || root.IsNull()) return p;
  FP_RETURN_IF_ERROR(root.CheckKeys({"basis", "min_rounds", "min_acceptance_rate", "min_remaining_output",
                                     "graph_buckets", "memory"}));
  if (root["basis"].present()) {
    FP_ASSIGN_OR_RETURN(std::string basis, root["basis"].AsString());
    const std::optional<SpeculationBasis> parsed = ParseSpeculationBasis(basis);
    if (!parsed) {
      return root["basis"].Error(fmt::format("expected basis: emitted (the target's own token counts) or basis: "
                                             "accepted (only accepted drafts count), got '{}'", basis));
    }
    p.basis = *parsed;
  }
  if (root["min_rounds"].present()) {
    FP_ASSIGN_OR_RETURN(p.min_rounds, root["min_rounds"].AsIntAtLeast(1));
  }
  if (root["min_acceptance_rate"].present()) {
    FP_ASSIGN_OR_RETURN(double v, root["min_acceptance_rate"].AsDoubleInRange(0, 1));
    p.min_acceptance_rate = v;
  }
  if (root["min_remaining_output"].present()) {
    FP_ASSIGN_OR_RETURN(int64_t v, root["min_remaining_output"].AsIntAtLeast(1));
    p.min_remaining_output = v;
  }
  if (root["graph_buckets"].present()) {
    FP_ASSIGN_OR_RETURN(auto items, root["graph_buckets"].Items());
    for (const YamlNode& item : items) {
      FP_ASSIGN_OR_RETURN(int64_t b, item.AsIntAtLeast(1));
      if (!p.graph_buckets.empty() && b <= p.graph_buckets.back()) {
        return item.Error(fmt::format("expected strictly increasing buckets, got {} after {}", b,
                                      p.graph_buckets.back()));
      }
      p.graph_buckets.push_back(b);
    }
  }
  const YamlNode mem = root["memory"];
  if (mem.present() && !mem.IsNull()) {
    FP_RETURN_IF_ERROR(mem.CheckKeys({"fit", "draft_weights", "draft_kv", "max_kv_share"}));
    SpecMemoryPolicy m;
    FP_ASSIGN_OR_RETURN(m.draft_weights, mem["draft_weights"].AsBytes());
    FP_ASSIGN_OR_RETURN(m.draft_kv, mem["draft_kv"].AsBytes());
    FP_ASSIGN_OR_RETURN(m.max_kv_share, mem["max_kv_share"].AsDoubleInRange(0, 1));
    FP_ASSIGN_OR_RETURN(FitResult fit, gates_detail::CheckFitSection(mem["fit"]));
    const StagePlan& stage = fit.plan.binding();
    if (stage.usable_kv.count() <= 0) {
      return mem["fit"].Error(fmt::format("the target leaves no memory for KV ({} per rank): "
                                          "`fleetplan fit` explains why", FormatBytes(stage.usable_kv)));
    }
    m.target_kv = stage.usable_kv;
    m.target_sequences = fit.max_sequences;
    m.sequence_kv = fit.sequence.reserved_bytes_per_rank.at(static_cast<size_t>(fit.binding_stage));
    p.memory = m;
  }
  return p;
}

Expected<SpecPolicy> LoadSpecPolicy(const std::string& path) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadFile(path));
  return ReadSpecPolicy(doc.root());
}

namespace {

// The rules of the policy that turn speculation off (reasons) or make it conditional.
void ApplyPolicy(const SpecPolicy& p, const SpecAnalysis& a, SpecDraftResult& d) {
  if (p.min_acceptance_rate && a.acceptance_rate < *p.min_acceptance_rate) {
    d.reasons.push_back(fmt::format("low acceptance: {:.4g} of drafted tokens accepted, policy minimum {:.4g}",
                                    a.acceptance_rate, *p.min_acceptance_rate));
  }
  if (p.memory) {
    const SpecMemoryPolicy& m = *p.memory;
    const Bytes draft = m.draft_weights + m.draft_kv;
    const double share = static_cast<double>(draft.count()) / static_cast<double>(m.target_kv.count());
    const int64_t left = m.sequence_kv.count() > 0
                             ? std::max<int64_t>(0, (m.target_kv - draft).count() / m.sequence_kv.count())
                             : 0;
    if (share > m.max_kv_share) {
      d.reasons.push_back(fmt::format("memory pressure: the draft takes {} of the target's {} KV per rank "
                                      "({:.3g}%, policy maximum {:.3g}%); sequences at the fit's context {} -> {}",
                                      FormatBytes(draft), FormatBytes(m.target_kv), share * 100,
                                      m.max_kv_share * 100, m.target_sequences, std::min(left, m.target_sequences)));
    }
  }
  if (p.min_remaining_output) {
    d.conditions.push_back(fmt::format("off for requests with fewer than {} remaining output tokens (short remaining "
                                       "outputs)", *p.min_remaining_output));
  }
  if (!p.graph_buckets.empty()) {
    const int64_t largest = p.graph_buckets.back();
    const int64_t shape = a.max_draft + 1;
    const int64_t max_batch = largest / shape;
    if (max_batch < 1) {
      d.reasons.push_back(fmt::format("shapes outside the graph buckets: one sequence's verify step computes {} "
                                      "tokens, above the largest bucket {}", shape, largest));
    } else {
      d.conditions.push_back(fmt::format("off above batch {}: a verify step computes batch x {} tokens and the "
                                         "largest graph bucket is {}", max_batch, shape, largest));
      if (a.max_batch > max_batch) {
        d.conditions.back() += fmt::format(" (the rounds reach batch {})", a.max_batch);
      }
    }
  }
}

SpecDraftResult DecideDraft(const SpecRounds& f, double ordinary_ms, const SpecPolicy& p) {
  SpecDraftResult d;
  d.file = f.file;
  d.identity = f.identity;
  d.analysis = AnalyzeRounds(f, ordinary_ms);
  const SpecAnalysis& a = d.analysis;
  d.checks.push_back(IdentityCheck(f.identity, f.file));
  Json counts = {{"rounds", a.rounds}, {"min_rounds", p.min_rounds}};
  if (a.rounds < p.min_rounds) {
    d.checks.push_back(HoldCheck("evidence", fmt::format("{} rounds, the policy needs at least {}", a.rounds,
                                                         p.min_rounds), counts));
  } else {
    d.checks.push_back(PassCheck("evidence", fmt::format("{} rounds (at least {})", a.rounds, p.min_rounds), counts));
  }
  if (a.error_rounds > 0) {
    d.evaluation_failed = true;
    d.reasons.push_back(fmt::format("{} round(s) report a verification error (first at line {}): the evaluation failed",
                                    a.error_rounds, a.first_error_line));
    d.checks.push_back(FailCheck("verification", d.reasons.back(), {{"error_rounds", a.error_rounds}}));
  }
  d.economics = JudgeSpeculationCost(p.basis, a.mean_round_ms, a.mean_accepted, ordinary_ms);
  const SpeculationEconomics& e = d.economics;
  const std::string basis(SpeculationBasisName(p.basis));
  // The figure the basis decides on, compared with ordinary decoding; the other alongside.
  const auto ms = [](std::optional<double> v) { return v ? fmt::format("{:.4g} ms", *v) : std::string("n/a"); };
  const bool emitted = p.basis == SpeculationBasis::kEmitted;
  const std::string deciding =
      emitted ? fmt::format("{:.4g} ms per emitted token", e.per_emitted_ms)
              : fmt::format("{} per accepted token", ms(e.per_accepted_ms));
  const std::string other = emitted ? fmt::format("{} per accepted token", ms(e.per_accepted_ms))
                                    : fmt::format("{:.4g} ms per emitted token", e.per_emitted_ms);
  const std::string figures =
      fmt::format("{} {} {:.4g} ms ordinary ({}; mean accepted {:.4g} {} break-even {:.4g})", deciding,
                  e.pays ? "<" : ">=", ordinary_ms, other, a.mean_accepted, e.pays ? ">" : "<=",
                  e.break_even_accepted);
  const Json cost = SpeculationEconomicsJson(e);
  if (a.mean_round_ms <= 0) {
    d.reasons.push_back(fmt::format("the {} rounds cost 0 ms (draft_ms + verify_ms): they measured no time, so "
                                    "nothing says what speculation costs", a.rounds));
    d.checks.push_back(HoldCheck("cost", d.reasons.back(), cost));
  } else if (e.pays) {
    d.checks.push_back(PassCheck("cost", fmt::format("on the {} basis, {}", basis, figures), cost));
  } else {
    d.reasons.push_back(fmt::format("not cheaper on the {} basis: {}", basis, figures));
    d.checks.push_back(FailCheck("cost", d.reasons.back(), cost,
                                 fmt::format("mean_accepted > {:.4g} at the same round cost, or a mean round "
                                             "below {:.4g} ms at the same acceptance",
                                             e.break_even_accepted,
                                             (p.basis == SpeculationBasis::kEmitted ? a.mean_emitted : a.mean_accepted) *
                                                 ordinary_ms)));
  }
  const size_t before = d.reasons.size();
  ApplyPolicy(p, a, d);
  for (size_t i = before; i < d.reasons.size(); ++i) d.checks.push_back(FailCheck("policy", d.reasons[i]));
  d.verdict = (d.reasons.empty()) ? "speculate" : "ordinary";
  d.decision = Combine(d.checks);
  return d;
}

Json AnalysisJson(const SpecDraftResult& d) {
  const SpecAnalysis& a = d.analysis;
  auto rounded = [](const std::vector<double>& v) {
    Json arr = Json::array();
    for (double x : v) arr.push_back(RoundForReport(x));
    return arr;
  };
  Json j = {{"file", d.file},
            {"identity", ToJson(d.identity)},
            {"rounds", a.rounds},
            {"error_rounds", a.error_rounds},
            {"drafted_tokens", a.drafted},
            {"accepted_tokens", a.accepted},
            {"emitted_tokens", a.emitted},
            {"mean_accepted", RoundForReport(a.mean_accepted)},
            {"mean_emitted", RoundForReport(a.mean_emitted)},
            {"acceptance_rate", RoundForReport(a.acceptance_rate)},
            {"total_cost_ms", ReportMs(a.total_ms)},
            {"mean_round_ms", ReportMs(a.mean_round_ms)},
            {"cost_per_emitted_ms", ReportMs(a.cost_per_emitted_ms)},
            {"round_p50_ms", ReportMs(a.round_p50_ms)},
            {"round_p95_ms", ReportMs(a.round_p95_ms)},
            {"acceptance_by_position", {{"conditional", rounded(a.conditional)}, {"cumulative", rounded(a.cumulative)}}},
            {"break_even_accepted", RoundForReport(a.break_even_accepted)},
            {"cost", SpeculationEconomicsJson(d.economics)},
            {"verdict", d.verdict},
            {"decision", GateDecisionName(d.decision)},
            {"reasons", d.reasons},
            {"conditions", d.conditions},
            {"checks", ToJson(d.checks)}};
  j["cost_per_accepted_ms"] = a.cost_per_accepted_ms ? Json(ReportMs(*a.cost_per_accepted_ms)) : Json(nullptr);
  return j;
}

std::string DraftText(const SpecDraftResult& d, double ordinary_ms) {
  const SpecAnalysis& a = d.analysis;
  std::string out = fmt::format("{}: {} rounds, {} drafted, {} accepted, {} emitted tokens\n", d.file, a.rounds,
                                a.drafted, a.accepted, a.emitted);
  out += fmt::format("  mean accepted {:.4g}, mean emitted {:.4g} per round (acceptance rate {:.4g})\n",
                     a.mean_accepted, a.mean_emitted, a.acceptance_rate);
  out += fmt::format("  cost {:.4g} ms total; per accepted token {}; per emitted token {:.4g} ms\n", a.total_ms,
                     a.cost_per_accepted_ms ? fmt::format("{:.4g} ms", *a.cost_per_accepted_ms) : "n/a",
                     a.cost_per_emitted_ms);
  out += fmt::format("  round latency p50 {:.4g} ms, p95 {:.4g} ms\n", a.round_p50_ms, a.round_p95_ms);
  std::vector<std::string> cond, cum;
  for (double x : a.conditional) cond.push_back(fmt::format("{:.3g}", x));
  for (double x : a.cumulative) cum.push_back(fmt::format("{:.3g}", x));
  out += fmt::format("  acceptance by position: conditional [{}], cumulative [{}]\n", fmt::join(cond, ", "),
                     fmt::join(cum, ", "));
  const SpeculationEconomics& e = d.economics;
  out += fmt::format("  break-even against {:.4g} ms ordinary decode: {:.4g} accepted tokens per round on the emitted "
                     "basis, {:.4g} on the accepted basis\n",
                     ordinary_ms, a.mean_round_ms / ordinary_ms - 1, a.mean_round_ms / ordinary_ms);
  out += fmt::format("  decided on the {} basis: {}\n", SpeculationBasisName(e.basis),
                     e.pays ? "pays" : "does not pay");
  out += fmt::format("  verdict: {} (decision: {})\n", d.verdict, GateDecisionName(d.decision));
  for (const std::string& c : d.conditions) out += fmt::format("  condition: {}\n", c);
  out += ChecksText(d.checks, "    ");
  return out;
}

Json ComparisonJson(const PairedComparison& c, const SpecGateResult& r) {
  Json j = {{"decision", GateDecisionName(c.decision)},
            {"reason", c.reason},
            {"pairs", c.pairs},
            {"sequences", c.sequences},
            {"mismatches", c.mismatches},
            {"first", r.drafts[0].file},
            {"second", r.drafts[1].file},
            {"first_cost_per_emitted_ms", ReportMs(c.first_ms)},
            {"second_cost_per_emitted_ms", ReportMs(c.second_ms)},
            {"mean_diff_ms", ReportMs(c.mean_diff_ms)},
            {"resamples", kBootstrapResamples}};
  j["winner"] = c.winner.empty() ? Json(nullptr) : Json(c.winner);
  j["interval_ms"] = c.decision == GateDecision::kPass ? Json::array({ReportMs(c.low_ms), ReportMs(c.high_ms)})
                                                       : Json(nullptr);
  return j;
}

}  // namespace

SpecGateResult RunSpeculationGate(const std::vector<SpecRounds>& files, double ordinary_ms,
                                  const SpecPolicy& policy, uint64_t seed) {
  FP_ASSERT(!files.empty() && files.size() <= 2);
  SpecGateResult r;
  r.ordinary_ms = ordinary_ms;
  r.policy = policy;
  for (const SpecRounds& f : files) r.drafts.push_back(DecideDraft(f, ordinary_ms, policy));
  if (files.size() == 2) r.comparison = ComparePaired(files[0], files[1], seed);
  return r;
}

Json ToJson(const SpecGateResult& r) {
  Json j = AnalysisJson(r.drafts[0]);
  j["gate"] = "speculation";
  j["ordinary_ms"] = ReportMs(r.ordinary_ms);
  j["advance_to"] = r.drafts[0].decision == GateDecision::kPass ? Json("staging") : Json(nullptr);
  if (r.drafts.size() == 2) {
    j["second"] = AnalysisJson(r.drafts[1]);
    j["comparison"] = ComparisonJson(*r.comparison, r);
  }
  return j;
}

std::string ToText(const SpecGateResult& r) {
  std::string out = fmt::format("speculation gate (ordinary decode {:.4g} ms per token)\n", r.ordinary_ms);
  for (const SpecDraftResult& d : r.drafts) out += DraftText(d, r.ordinary_ms);
  if (r.comparison) {
    const PairedComparison& c = *r.comparison;
    out += fmt::format("paired comparison ({}): {}\n", GateDecisionName(c.decision), c.reason);
  }
  return out;
}

int ExitCode(const SpecGateResult& r) {
  for (const SpecDraftResult& d : r.drafts) {
    if (d.evaluation_failed || d.decision == GateDecision::kHold) return 1;
  }
  if (r.comparison && r.comparison->decision == GateDecision::kHold) return 1;
  return 0;
}

Expected<GateReport> RunSpeculationRequest(const GateRequest& request) {
  const std::optional<std::string> ordinary = request.Option("--ordinary");
  if (!ordinary) {
    return UsageError("gate speculation: --ordinary DURATION is required (the measured cost of one ordinary "
                      "decode step, e.g. --ordinary 8ms)");
  }
  FP_ASSIGN_OR_RETURN(double ordinary_ms, ParseMsFlag("--ordinary", *ordinary));
  SpecPolicy policy;
  if (std::optional<std::string> path = request.Option("--policy")) {
    FP_ASSIGN_OR_RETURN(policy, LoadSpecPolicy(*path));
  }
  if (std::optional<std::string> basis = request.Option("--basis")) {
    const std::optional<SpeculationBasis> parsed = ParseSpeculationBasis(*basis);
    if (!parsed) return UsageError(fmt::format("--basis: expected emitted or accepted, got '{}'", *basis));
    policy.basis = *parsed;
  }
  std::vector<SpecRounds> files;
  for (const std::string& path : request.files) {
    FP_ASSIGN_OR_RETURN(SpecRounds f, LoadSpecRounds(path));
    files.push_back(std::move(f));
  }
  const SpecGateResult result = RunSpeculationGate(files, ordinary_ms, policy, request.seed);
  return GateReport{ToJson(result), ToText(result), ExitCode(result)};
}

}  // namespace fleetplan
