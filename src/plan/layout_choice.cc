// The choice among simulated layouts (layout_choice.h): goodput, then failure domains in
// the close band, then staging where the model cannot separate the candidates.
#include "fleetplan/core/flag_error.h"
#include "fleetplan/plan/layout_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <numeric>
#include <tuple>

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

constexpr std::array<std::pair<LossDomain, std::string_view>, 3> kDomains = {
    {{LossDomain::kNode, "node"}, {LossDomain::kRack, "rack"}, {LossDomain::kZone, "zone"}}};

Status StagingError(std::string_view text, std::string_view message) {
  return FlagValueError("--staging", fmt::format("{}: {}", QuoteValue(text), message));
}

constexpr std::string_view kStagingForm = "expected SPEC=FILE with SPEC like tp4, tp4xdp2 or tp8xpp2xep1xdp1";

// One `tp4` part of a spec into its key and value.
Status ReadPart(std::string_view text, std::string_view part, std::array<std::optional<int64_t>, 4>& values) {
  static constexpr std::array<std::string_view, 4> keys = {"tp", "pp", "ep", "dp"};
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!part.starts_with(keys[k])) continue;
    const std::string_view digits = part.substr(2);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || v < 1 || v > 4096) {
      return StagingError(text, fmt::format("{}: expected {} followed by an integer between 1 and 4096", QuoteValue(part),
                                            keys[k]));
    }
    if (values[k]) return StagingError(text, fmt::format("{} is given twice", keys[k]));
    values[k] = v;
    return Status::Ok();
  }
  return StagingError(text, fmt::format("unknown part {}; {}", QuoteValue(part), kStagingForm));
}

}  // namespace

std::string_view LossDomainName(LossDomain d) {
  for (const auto& [domain, name] : kDomains) {
    if (domain == d) return name;
  }
  return "node";
}

Expected<LossDomain> ParseLossDomain(std::string_view name) {
  for (const auto& [domain, n] : kDomains) {
    if (n == name) return domain;
  }
  return FlagValueError("--failure-domain",
                      UnknownNameMessage("failure domain", name, std::vector<std::string>{"node", "rack", "zone"}));
}

int64_t ReplicasLeft(const DomainLoss& loss, LossDomain d) {
  switch (d) {
    case LossDomain::kNode: return loss.node;
    case LossDomain::kRack: return loss.rack;
    case LossDomain::kZone: return loss.zone;
  }
  return loss.node;
}

Expected<StagingInput> ParseStagingSpec(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) return StagingError(text, kStagingForm);
  StagingInput in;
  in.spec = std::string(text.substr(0, eq));
  in.path = std::string(text.substr(eq + 1));
  std::array<std::optional<int64_t>, 4> values;
  std::string_view rest = in.spec;
  while (!rest.empty()) {
    const size_t x = rest.find('x');
    FP_RETURN_IF_ERROR(ReadPart(text, rest.substr(0, x), values));
    rest = x == std::string_view::npos ? std::string_view() : rest.substr(x + 1);
    if (x != std::string_view::npos && rest.empty()) return StagingError(text, kStagingForm);
  }
  if (!values[0]) return StagingError(text, "the spec needs tp (e.g. tp4)");
  in.layout.tp = *values[0];
  in.layout.pp = values[1].value_or(1);
  in.layout.ep = values[2].value_or(1);
  in.dp = values[3];
  return in;
}

std::string_view ChoiceBasisName(ChoiceBasis b) {
  switch (b) {
    case ChoiceBasis::kGoodput: return "goodput";
    case ChoiceBasis::kResilience: return "resilience";
    case ChoiceBasis::kStaging: return "staging";
    case ChoiceBasis::kNeedsStaging: return "needs-staging";
  }
  return "goodput";
}

bool WithinShare(double a, double b, double share) {
  const double larger = std::max(a, b);
  if (larger <= 0) return true;
  return std::min(a, b) >= (1.0 - share) * larger;
}

std::vector<size_t> NeedsAfterLoss(const std::vector<ChoiceCandidate>& candidates, const ChoiceRules& rules) {
  std::vector<size_t> out;
  if (candidates.empty()) return out;
  const double widest = std::max(rules.close_call, rules.model_error);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (WithinShare(candidates[0].goodput_per_gpu, candidates[i].goodput_per_gpu, widest)) out.push_back(i);
  }
  return out;
}

std::vector<size_t> RankWithResilience(const std::vector<ChoiceCandidate>& candidates, const ChoiceRules& rules) {
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (candidates.empty()) return order;
  const double lead = candidates[0].goodput_per_gpu;
  size_t band_end = 0;
  while (band_end < candidates.size() && WithinShare(lead, candidates[band_end].goodput_per_gpu, rules.close_call)) {
    ++band_end;
  }
  // Inside the band: after-loss goodput per GPU (one that could not be simulated last),
  // then goodput, then the goodput order.
  auto key = [&](size_t i) {
    return std::make_tuple(-candidates[i].after_loss_per_gpu.value_or(-1.0), -candidates[i].goodput_per_gpu);
  };
  std::stable_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(band_end),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

CandidateChoice ChooseCandidate(const std::vector<ChoiceCandidate>& candidates, const ChoiceRules& rules) {
  CandidateChoice c;
  size_t leader = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i].goodput_per_gpu > candidates[leader].goodput_per_gpu) leader = i;
  }
  c.band.push_back(leader);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i != leader && WithinShare(candidates[leader].goodput_per_gpu, candidates[i].goodput_per_gpu, rules.close_call)) {
      c.band.push_back(i);
    }
  }
  const ChoiceCandidate& pick = candidates[0];
  c.basis = leader == 0 ? ChoiceBasis::kGoodput : ChoiceBasis::kResilience;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const ChoiceCandidate& other = candidates[i];
    const bool goodput_close = WithinShare(pick.goodput_per_gpu, other.goodput_per_gpu, rules.model_error);
    const bool loss_close = pick.after_loss_per_gpu && other.after_loss_per_gpu &&
                            WithinShare(*pick.after_loss_per_gpu, *other.after_loss_per_gpu, rules.model_error);
    if (goodput_close && loss_close) c.indistinguishable.push_back(i);
  }
  if (c.indistinguishable.empty()) return c;
  std::vector<size_t> contenders = {0};
  contenders.insert(contenders.end(), c.indistinguishable.begin(), c.indistinguishable.end());
  for (const size_t i : contenders) {
    if (!candidates[i].staged_per_gpu) c.needs_staging.push_back(i);
  }
  if (!c.needs_staging.empty()) {
    c.basis = ChoiceBasis::kNeedsStaging;
    return c;
  }
  c.basis = ChoiceBasis::kStaging;
  c.chosen = contenders.front();
  for (const size_t i : contenders) {
    if (*candidates[i].staged_per_gpu > *candidates[c.chosen].staged_per_gpu) c.chosen = i;
  }
  return c;
}

}  // namespace fleetplan
