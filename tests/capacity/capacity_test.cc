// Capacity sizing: the spec reader, the binding requirement, loss scenarios, placement
// across failure domains, prices and budgets, the per-replica search, and the
// verification of a fleet through a domain loss by simulation.
#include "fleetplan/capacity/capacity.h"

#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fleetplan/capacity/spec.h"
#include "fleetplan/capacity/verify.h"
#include "fleetplan/perf/stated_error.h"
#include "support/in_scratch.h"
#include "support/small_scenarios.h"

namespace fleetplan {
namespace {

using testing::InScratch;


std::string SpecText(std::string_view extra) {
  return std::string(R"(version: 1
scenario: small.yaml
demand: {east: 20/s, west: 10/s}
domains:
  east-a: {region: east, gpus: 64}
  east-b: {region: east, gpus: 64}
  west-a: {region: west, gpus: 48}
survive: largest-domain
headroom: 0%
price: {on_demand: 4/gpu-h}
)") + std::string(extra);
}

class Capacity : public InScratch {
 protected:
  void SetUp() override {
    InScratch::SetUp();
    std::ofstream("small.yaml") << testing::kSmallInteractive;
  }
  Expected<CapacitySpec> Load(std::string_view extra) { return LoadCapacitySpecText(SpecText(extra), "cap.yaml", "."); }
  // One replica's rate searched at 95 % interactive attainment (30 s probes), not verified.
  Expected<CapacityResult> SizeSearched() {
    FP_ASSIGN_OR_RETURN(const CapacitySpec spec, Load("replica_capacity: {search: {attainment: {interactive: 0.95}, "
                                                      "low: 1/s, high: 64/s, duration: 30s}}\n"));
    CapacityOptions opt;
    opt.verify = false;
    return SizeCapacity(spec, opt);
  }
};

// The error's first line (the rest shows the source line and a caret).
std::string ErrorOf(const Expected<CapacitySpec>& s) {
  if (s.ok()) return "(loaded)";
  const std::string& m = s.status().message();
  return m.substr(0, m.find('\n'));
}

TEST_F(Capacity, SpecErrorsAreLocatedWithDidYouMean) {
  EXPECT_EQ(ErrorOf(Load("replica_capacity: {rate: 2/s}\nbudjet: 100/month\n")),
            "cap.yaml:12:1: unknown field 'budjet'; did you mean 'budget'? (valid: version, scenario, builtin, "
            "demand, domains, survive, headroom, replica_capacity, price, budget, layouts, verify)");
  auto bad_region = LoadCapacitySpecText(
      "version: 1\nscenario: small.yaml\ndemand: {east: 2/s}\ndomains: {a: {region: eats, gpus: 8}}\nsurvive: none\n"
      "replica_capacity: {rate: 1/s}\nprice: {on_demand: 1/gpu-h}\n",
      "cap.yaml", ".");
  EXPECT_EQ(ErrorOf(bad_region), "cap.yaml:4:23: domains.a.region: unknown region 'eats'; did you mean 'east'? (valid: "
                                 "east) (regions are the keys of demand)");
  auto survive = LoadCapacitySpecText(
      "version: 1\nscenario: small.yaml\ndemand: {east: 2/s}\ndomains: {a: {region: east, gpus: 8}}\n"
      "survive: any-one-domian\nreplica_capacity: {rate: 1/s}\nprice: {on_demand: 1/gpu-h}\n",
      "cap.yaml", ".");
  EXPECT_EQ(ErrorOf(survive), "cap.yaml:5:10: survive: unknown loss to survive 'any-one-domian'; did you mean "
                              "'any-one-domain'? (valid: none, largest-domain, any-one-domain, any-one-region)");
  EXPECT_EQ(ErrorOf(Load("replica_capacity: {search: {attainment: {interactiv: 0.99}}}\n")),
            "cap.yaml:11:54: replica_capacity.search.attainment.interactiv: unknown SLO class 'interactiv'; did you mean "
            "'interactive'? (valid: interactive) (classes of the scenario's slo)");
  EXPECT_EQ(ErrorOf(LoadCapacitySpecText(SpecText("replica_capacity: {rate: 2/s}\n").replace(
                                             SpecText("").find("4/gpu-h"), 7, "4/hour"),
                                         "cap.yaml", ".")),
            "cap.yaml:10:20: price.on_demand: expected a price per GPU-hour such as 4.10/gpu-h, got '4/hour'");
  auto headroom = LoadCapacitySpecText(SpecText("replica_capacity: {rate: 2/s}\n").replace(SpecText("").find("0%"), 2, "100%"),
                                       "cap.yaml", ".");
  EXPECT_EQ(ErrorOf(headroom), "cap.yaml:9:11: headroom: expected a headroom below 100%, got 100%");
  EXPECT_NE(ErrorOf(Load("replica_capacity: {rate: 2/s, file: x.json}\n")).find("exactly one of search, file or rate"),
            std::string::npos);
  // `builtin: atlas` may stand beside the other keys instead of `scenario`, not with it.
  EXPECT_EQ(ErrorOf(LoadCapacitySpecText("version: 1\nbuiltin: atlaz\n", "cap.yaml", ".")),
            "cap.yaml:2:10: builtin: unknown built-in scenario 'atlaz'; did you mean 'atlas'? (valid: atlas)");
  EXPECT_EQ(ErrorOf(LoadCapacitySpecText("version: 1\nscenario: small.yaml\nbuiltin: atlas\n", "cap.yaml", ".")),
            "cap.yaml:3:10: builtin: give either scenario or builtin, not both");
  auto missing = LoadCapacitySpecText("version: 1\nscenario: nope.yaml\n", "cap.yaml", ".");
  EXPECT_NE(ErrorOf(missing).find("cap.yaml:2:11: scenario:"), std::string::npos) << ErrorOf(missing);
}

// `1e308/gpu-h` overflowed the cost to infinity (exit 70 writing capacity.json), and
// `99999999999999999999/gpu-h` priced a fleet at $4.8e21/h: prices are bounded at read.
TEST_F(Capacity, AnAbsurdPriceIsRefusedWhereItIsWritten) {
  const auto with_price = [](std::string_view price) {
    std::string text = SpecText("replica_capacity: {rate: 2/s}\n");
    return LoadCapacitySpecText(text.replace(text.find("{on_demand: 4/gpu-h}"), 20, price), "cap.yaml", ".");
  };
  EXPECT_EQ(ErrorOf(with_price("{on_demand: 1e308/gpu-h}")),
            "cap.yaml:10:20: price.on_demand: expected a price of at most 1000000/gpu-h (fleetplan's limit; "
            "docs/limits.md), got '1e308/gpu-h'");
  EXPECT_EQ(ErrorOf(with_price("{on_demand: 99999999999999999999/gpu-h}")),
            "cap.yaml:10:20: price.on_demand: expected a price of at most 1000000/gpu-h (fleetplan's limit; "
            "docs/limits.md), got '99999999999999999999/gpu-h'");
  EXPECT_EQ(ErrorOf(with_price("{on_demand: 4/gpu-h, committed: {rate: 1000001/gpu-h, gpus: 8, term: 1y}}")),
            "cap.yaml:10:47: price.committed.rate: expected a price of at most 1000000/gpu-h (fleetplan's limit; "
            "docs/limits.md), got '1000001/gpu-h'");
  auto at_limit = with_price("{on_demand: 1000000/gpu-h}");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_EQ(at_limit->price.on_demand_per_gpu_hour, 1e6);
}

DimensionRequirement Dim(std::string name, double exact) {
  DimensionRequirement d;
  d.name = std::move(name);
  d.exact_replicas = exact;
  d.replicas = static_cast<int64_t>(std::ceil(exact));
  return d;
}

TEST(CapacityBinding, ADimensionThatOnlyTiesAfterRoundingIsATie) {
  EXPECT_EQ(BindingDimensions({Dim("prompt", 7.2), Dim("decode", 7.9), Dim("concurrency", 3.1)}),
            (std::vector<std::string>{"prompt", "decode"}));
  EXPECT_EQ(BindingDimensions({Dim("prompt", 7.2), Dim("decode", 8.1), Dim("concurrency", 3.1)}),
            (std::vector<std::string>{"decode"}));
}

std::vector<FailureDomain> Domains() {
  return {{"east-a", "east", 64}, {"east-b", "east", 32}, {"west-a", "west", 64}};
}
std::vector<RegionDemand> Demand() { return {{"east", Rate{20}}, {"west", Rate{10}}}; }

TEST(CapacityLosses, EachRuleListsItsScenariosAfterTheBaseline) {
  auto names = [](const std::vector<LossScenario>& s) {
    std::vector<std::string> out;
    for (const LossScenario& l : s) out.push_back(l.name);
    return out;
  };
  EXPECT_EQ(names(LossScenariosOf(SurviveRule::kNone, Domains(), Demand())), (std::vector<std::string>{"none"}));
  // The largest domain offers the most GPUs; a tie lists every tied domain.
  EXPECT_EQ(names(LossScenariosOf(SurviveRule::kLargestDomain, Domains(), Demand())),
            (std::vector<std::string>{"none", "domain:east-a", "domain:west-a"}));
  EXPECT_EQ(names(LossScenariosOf(SurviveRule::kAnyOneDomain, Domains(), Demand())),
            (std::vector<std::string>{"none", "domain:east-a", "domain:east-b", "domain:west-a"}));
  const auto regions = LossScenariosOf(SurviveRule::kAnyOneRegion, Domains(), Demand());
  EXPECT_EQ(names(regions), (std::vector<std::string>{"none", "region:east", "region:west"}));
  EXPECT_EQ(regions[1].lost, (std::vector<std::string>{"east-a", "east-b"}));
}

PlacementProblem Problem(std::vector<FailureDomain> domains, std::vector<double> need, int64_t max_replicas = 100) {
  PlacementProblem p;
  p.domains = std::move(domains);
  for (const FailureDomain& d : p.domains) {
    if (std::find(p.regions.begin(), p.regions.end(), d.region) == p.regions.end()) p.regions.push_back(d.region);
    p.max_replicas.push_back(max_replicas);
  }
  p.need = std::move(need);
  return p;
}

TEST(CapacityPlacement, TheLossNotMeanTrafficSetsTheSize) {
  // Two equal domains of one region: losing either leaves the other to carry all 10.
  const auto two = Problem({{"a", "r", 8}, {"b", "r", 8}}, {10});
  EXPECT_EQ(ReplicasNeeded(two, {}), 10);
  EXPECT_EQ(ReplicasNeeded(two, {"a"}), 15);  // a keeps its 5 until it fails; b must hold 10
  const auto all = LossScenariosOf(SurviveRule::kAnyOneDomain, two.domains, {{"r", Rate{1}}});
  auto x = PlaceForLosses(two, all, nullptr);
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(*x, (std::vector<int64_t>{10, 10}));
  for (const LossScenario& s : all) EXPECT_TRUE(Carries(two, *x, s.lost)) << s.name;
  // Three equal domains: each must carry half of the region after one fails.
  const auto three = Problem({{"a", "r", 8}, {"b", "r", 8}, {"c", "r", 8}}, {12});
  auto x3 = PlaceForLosses(three, LossScenariosOf(SurviveRule::kAnyOneDomain, three.domains, {{"r", Rate{1}}}), nullptr);
  ASSERT_TRUE(x3.has_value());
  EXPECT_EQ(*x3, (std::vector<int64_t>{6, 6, 6}));
  // Without redundancy the same fleet is the demand split by GPUs, and it does not carry a loss.
  auto x0 = PlaceForLosses(three, {LossScenario{"none", {}}}, nullptr);
  ASSERT_TRUE(x0.has_value());
  EXPECT_EQ(*x0, (std::vector<int64_t>{4, 4, 4}));
  EXPECT_FALSE(Carries(three, *x0, {"a"}));
}

TEST(CapacityPlacement, DemandFollowsTheGpusEachDomainOffersAndARegionLossMovesToTheOthers) {
  const auto p = Problem({{"a", "east", 96}, {"b", "east", 32}, {"w", "west", 64}}, {8, 4});
  // Normal traffic: east 8 split 3:1, west 4.
  auto base = PlaceForLosses(p, {LossScenario{"none", {}}}, nullptr);
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(*base, (std::vector<int64_t>{6, 2, 4}));
  // Losing east: west takes all 12.
  EXPECT_EQ(ReplicasNeeded(p, {"a", "b"}), 6 + 2 + 12);
  auto x = PlaceForLosses(p, LossScenariosOf(SurviveRule::kAnyOneRegion, p.domains, {{"east", Rate{1}}, {"west", Rate{1}}}),
                          nullptr);
  ASSERT_TRUE(x.has_value());
  // Each domain holds the most any scenario routes to it: west lost, east carries 12 split
  // 3:1; east lost, west carries 12.
  EXPECT_EQ(*x, (std::vector<int64_t>{9, 3, 12}));
  EXPECT_TRUE(Carries(p, *x, {"a", "b"}));
  EXPECT_TRUE(Carries(p, *x, {"w"}));
}

TEST(CapacityPlacement, ADomainTooSmallForItsShareNamesTheDomainAndTheLoss) {
  const auto p = Problem({{"a", "r", 8}, {"b", "r", 8}}, {10}, 7);
  std::string why;
  EXPECT_FALSE(PlaceForLosses(p, LossScenariosOf(SurviveRule::kAnyOneDomain, p.domains, {{"r", Rate{1}}}), &why));
  EXPECT_EQ(why, "domain 'a' must hold 10 replicas (its share of r's demand after loss 'domain:b') but its 8 GPUs hold 7");
}

TEST(CapacityPrice, CommittedGpusArePaidWhetherUsedOrNot) {
  PriceSpec price{4.0, CommittedPrice{2.5, 100, "1y"}};
  const FleetCost under = PriceFleet(60, price);
  EXPECT_DOUBLE_EQ(under.per_hour, 250.0);
  EXPECT_EQ(under.on_demand_gpus, 0);
  EXPECT_EQ(under.committed_gpus_used, 60);
  EXPECT_DOUBLE_EQ(under.unused_committed_gpu_hours_per_month, 40 * kHoursPerMonth);
  const FleetCost over = PriceFleet(130, price);
  EXPECT_DOUBLE_EQ(over.per_hour, 250.0 + 30 * 4.0);
  EXPECT_DOUBLE_EQ(over.per_month, (250.0 + 120.0) * kHoursPerMonth);
  EXPECT_DOUBLE_EQ(over.unused_committed_gpu_hours_per_month, 0);
}

TEST_F(Capacity, APriceChangesCostNeverReplicaDemand) {
  auto cheap = Load("replica_capacity: {rate: 2/s}\n");
  ASSERT_TRUE(cheap.ok()) << cheap.status().message();
  CapacitySpec dear = *cheap;
  dear.price.on_demand_per_gpu_hour = 40;
  dear.price.committed = CommittedPrice{30, 8, "3y"};
  CapacityOptions opt;
  opt.verify = false;
  auto a = SizeCapacity(*cheap, opt);
  auto b = SizeCapacity(dear, opt);
  ASSERT_TRUE(a.ok() && b.ok());
  const LayoutCapacity& la = a->layouts.front();
  const LayoutCapacity& lb = b->layouts.front();
  EXPECT_EQ(la.per_domain, lb.per_domain);
  EXPECT_EQ(la.replicas, lb.replicas);
  for (size_t i = 0; i < la.requirements.size(); ++i) EXPECT_EQ(la.requirements[i].replicas, lb.requirements[i].replicas);
  EXPECT_DOUBLE_EQ(la.cost.per_hour, static_cast<double>(la.gpus) * 4);
  EXPECT_DOUBLE_EQ(lb.cost.per_hour, 8 * 30 + static_cast<double>(lb.gpus - 8) * 40);
}

TEST_F(Capacity, ABudgetViolationReportsTheSafeFleetAndNeverShrinksIt) {
  CapacityOptions opt;
  opt.verify = false;
  auto free = Load("replica_capacity: {rate: 2/s}\n");
  auto tight = Load("replica_capacity: {rate: 2/s}\nbudget: 1000/month\n");
  ASSERT_TRUE(free.ok() && tight.ok());
  auto a = SizeCapacity(*free, opt);
  auto b = SizeCapacity(*tight, opt);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->within_budget);
  EXPECT_FALSE(b->within_budget);
  EXPECT_EQ(a->layouts.front().per_domain, b->layouts.front().per_domain);
  const Json j = CapacityJson(*b);
  EXPECT_FALSE(j["within_budget"].get<bool>());
  EXPECT_EQ(j["fleet"]["replicas"], a->layouts.front().replicas);
  EXPECT_GT(j["budget"]["over_by_per_month"].get<double>(), 0);
}

TEST_F(Capacity, RequirementsNameTheBindingDimensionAndTheLossThatSetsTheSize) {
  auto spec = Load("replica_capacity: {rate: 2/s}\n");
  ASSERT_TRUE(spec.ok());
  CapacityOptions opt;
  opt.verify = false;
  auto r = SizeCapacity(*spec, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json j = CapacityJson(*r);
  for (const char* dim : {"prompt", "decode", "concurrency", "slo"}) {
    ASSERT_TRUE(j["requirements"].contains(dim)) << dim;
    EXPECT_GE(j["requirements"][dim]["replicas"].get<int64_t>(), 1) << dim;
  }
  // 30/s at 2/s per replica: the declared SLO rate binds at 15 replicas.
  EXPECT_EQ(j["requirements"]["slo"]["replicas"], 15);
  EXPECT_EQ(j["binding"], "slo");
  // east-a and east-b offer the most GPUs (64): losing either leaves the other to carry
  // east's 10 replica units alone.
  ASSERT_EQ(j["loss_scenarios"].size(), 3u);
  EXPECT_EQ(j["loss_scenarios"][0]["name"], "none");
  EXPECT_EQ(j["loss_scenarios"][0]["replicas_needed"], 15);
  EXPECT_EQ(j["loss_scenarios"][1]["lost"], Json::array({"east-a"}));
  EXPECT_EQ(j["loss_scenarios"][1]["replicas_needed"], 5 + 10 + 5);
  EXPECT_EQ(j["loss_scenarios"][2]["name"], "domain:east-b");
  EXPECT_EQ(j["set_by"], Json::array({"domain:east-a", "domain:east-b"}));
  EXPECT_EQ(j["fleet"]["per_domain"]["east-a"]["replicas"], 10);
  EXPECT_EQ(j["fleet"]["per_domain"]["east-b"]["replicas"], 10);
  EXPECT_EQ(j["fleet"]["per_domain"]["west-a"]["replicas"], 5);  // not a largest domain: no spare
  EXPECT_EQ(j["fleet"]["replicas"], 25);
  EXPECT_EQ(j["fleet"]["gpus"], 25);
  EXPECT_DOUBLE_EQ(j["cost"]["per_hour"].get<double>(), 100.0);
  // After losing east-a, 15 replicas survive (east-b 10, west-a 5) and 15 are required
  // there (east's 10 units on east-b, west's 5): survive first, required second.
  EXPECT_EQ(j["loss_scenarios"][1]["surviving_replicas"], 15);
  EXPECT_EQ(j["loss_scenarios"][1]["required_after_loss"], 15);
  EXPECT_EQ(j["loss_scenarios"][0]["surviving_replicas"], 25);
  EXPECT_EQ(j["loss_scenarios"][0]["required_after_loss"], 15);
  const std::string text = CapacityText(*r);
  EXPECT_NE(text.find("loss domain:east-a              15 replicas survive,   15 required after the loss; a fleet of   20 "
                      "survives it  (sets the size)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("this fleet keeps"), std::string::npos) << text;
}

TEST_F(Capacity, ASearchMeasuresOneReplicasRateAtTheTargetAttainment) {
  auto r = SizeSearched();
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LayoutCapacity& l = r->layouts.front();
  EXPECT_EQ(l.replica_capacity["source"], "search");
  EXPECT_EQ(l.replica_capacity["max_rate"]["status"], "found");
  const double rate = l.replica_capacity["max_rate"]["rate_per_s"].get<double>();
  EXPECT_GT(rate, 1.0);
  EXPECT_LT(rate, 64.0);
  // The searched rate is the slo requirement's per-replica capacity.
  EXPECT_DOUBLE_EQ(RoundForReport(l.requirements.back().per_replica), RoundForReport(rate));
  EXPECT_EQ(l.requirements.back().replicas, static_cast<int64_t>(std::ceil(30.0 / rate - 1e-9)));
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

TEST_F(Capacity, TheSizedFleetSurvivesItsDecidingLossInSimulationAndAFleetWithoutSpareDoesNot) {
  // East at 120/s needs about four replicas of this scenario: two per domain normally,
  // four in whichever domain survives.
  std::string text = SpecText(
      "replica_capacity: {search: {attainment: {interactive: 0.95}, low: 1/s, high: 64/s, duration: 30s}}\n"
      "verify: {loss_at: 60s, duration: 150s}\n");
  text.replace(text.find("east: 20/s"), 10, "east: 120/s");
  auto spec = LoadCapacitySpecText(text, "cap.yaml", ".");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto r = SizeCapacity(*spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->chosen.has_value());
  const LayoutCapacity& chosen = r->layouts[*r->chosen];
  const Json& v = chosen.simulated_after_loss;
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v["scenario"], "domain:east-a");  // the first of the tied deciding losses
  EXPECT_EQ(v["regions"], Json::array({"east"}));
  EXPECT_EQ(v["replicas_before"].get<int64_t>(), chosen.per_domain[0] + chosen.per_domain[1]);
  EXPECT_EQ(v["replicas_after"].get<int64_t>(), chosen.per_domain[1]);
  EXPECT_GT(v["requests_after"].get<int64_t>(), 1000);
  EXPECT_GE(v["attainment"]["interactive"].get<double>(), 0.95);
  EXPECT_TRUE(v["meets_targets"].get<bool>());

  // The same region placed for normal traffic only (demand split by GPUs, no spare):
  // losing east-a leaves half the replicas it needs, and attainment after the loss falls.
  PlacementProblem p;
  p.domains = spec->domains;
  for (const RegionDemand& d : spec->demand) {
    p.regions.push_back(d.region);
    p.need.push_back(d.peak.per_second / chosen.per_replica_rps);
  }
  for (size_t d = 0; d < p.domains.size(); ++d) p.max_replicas.push_back(1000);
  auto thin_domains = PlaceForLosses(p, {LossScenario{"none", {}}}, nullptr);
  ASSERT_TRUE(thin_domains.has_value());
  LayoutCapacity thin = chosen;
  thin.per_domain = *thin_domains;
  ASSERT_LT(thin.per_domain[1], chosen.per_domain[1]);
  auto thin_v = VerifyAfterLoss(*spec, thin);
  ASSERT_TRUE(thin_v.ok()) << thin_v.status().message();
  EXPECT_FALSE((*thin_v)["meets_targets"].get<bool>());
  EXPECT_LT((*thin_v)["attainment"]["interactive"].get<double>(), 0.5 * v["attainment"]["interactive"].get<double>());
  // Before the loss both fleets carry the demand.
  EXPECT_GE((*thin_v)["attainment_before"]["interactive"].get<double>(), 0.9);
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

TEST(CapacityLayouts, ALayoutThatDoesNotFitOneReplicaIsInfeasibleAndTheOthersAreSized) {
  auto spec = LoadCapacitySpecText(R"(version: 1
builtin: atlas
demand: {east: 10/s}
domains: {a: {region: east, gpus: 64}, b: {region: east, gpus: 64}}
survive: any-one-domain
replica_capacity: {rate: 2/s}
layouts: [{tp: 1}, {tp: 4}]
price: {on_demand: 4/gpu-h}
)",
                                   "cap.yaml", "");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  CapacityOptions opt;
  opt.verify = false;
  auto r = SizeCapacity(*spec, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->layouts.size(), 2u);
  EXPECT_FALSE(r->layouts[0].ok);
  EXPECT_NE(r->layouts[0].reason.find("leaves no memory for KV cache"), std::string::npos) << r->layouts[0].reason;
  ASSERT_TRUE(r->chosen.has_value());
  EXPECT_EQ(*r->chosen, 1u);
  EXPECT_EQ(r->layouts[1].per_domain, (std::vector<int64_t>{5, 5}));  // 10/s at 2/s: each domain carries all 5
  const Json j = CapacityJson(*r);
  EXPECT_EQ(j["chosen_layout"], "tp4");
  EXPECT_EQ(j["layouts"][0]["feasible"], false);
}

}  // namespace
}  // namespace fleetplan

namespace fleetplan {
namespace {

// A declared rate a replica cannot hold through the loss: the fleet sized from it misses
// its target after the loss, so it is sized again at smaller shares of the rate until the
// simulation meets the target, and every attempt is reported.
TEST_F(Capacity, AFleetThatMissesThroughItsLossIsGrownUntilItMeetsTheTarget) {
  auto measured = SizeSearched();
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  const double rate = measured->layouts.front().replica_capacity["max_rate"]["rate_per_s"].get<double>();

  std::string text = SpecText(fmt::format("replica_capacity: {{rate: {:.4f}/s}}\nverify: {{loss_at: 60s, duration: 150s}}\n",
                                          1.5 * rate));
  text.replace(text.find("east: 20/s"), 10, "east: 120/s");
  auto spec = LoadCapacitySpecText(text, "cap.yaml", ".");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto r = SizeCapacity(*spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LayoutCapacity& chosen = r->layouts[*r->chosen];
  const Json& g = chosen.grown_for_loss;
  ASSERT_TRUE(g.is_object()) << CapacityText(*r);
  ASSERT_TRUE(g["share"].is_number()) << g.dump();
  EXPECT_LT(g["share"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(chosen.verified_share, g["share"].get<double>());
  EXPECT_GT(chosen.replicas, g["sized_replicas"].get<int64_t>());
  const Json& attempts = g["attempts"];
  ASSERT_GE(attempts.size(), 2u);
  EXPECT_EQ(attempts.front()["share"], 1.0);
  EXPECT_EQ(attempts.front()["replicas"], g["sized_replicas"]);
  for (size_t i = 0; i + 1 < attempts.size(); ++i) {
    EXPECT_FALSE(attempts[i]["meets_targets"].get<bool>());
    EXPECT_LT(attempts[i]["replicas"].get<int64_t>(), attempts[i + 1]["replicas"].get<int64_t>());
  }
  EXPECT_TRUE(attempts.back()["meets_targets"].get<bool>());
  EXPECT_EQ(attempts.back()["replicas"], chosen.replicas);
  EXPECT_TRUE(chosen.simulated_after_loss["meets_targets"].get<bool>());
  EXPECT_NE(CapacityText(*r).find("  grown for the loss: the "), std::string::npos) << CapacityText(*r);
  const Json j = CapacityJson(*r);
  EXPECT_EQ(j["grown_for_loss"], g);
  // A declared rate is measured: it carries no model error.
  EXPECT_TRUE(j["model_error"].is_null());
}

// A searched rate is simulated: each layout reports its fleet with every step as much
// longer as the step model's stated error on its GPU.
TEST_F(Capacity, ASearchedRateShowsTheFleetAtThePessimisticEdgeOfTheModelsError) {
  auto r = SizeSearched();
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LayoutCapacity& l = r->layouts.front();
  const Json& e = l.model_error;
  ASSERT_TRUE(e.is_object());
  const StatedError stated = StatedErrorOf(e["step_model"].get<std::string>(), e["gpu"].get<std::string>());
  EXPECT_DOUBLE_EQ(e["band"].get<double>(), RoundForReport(stated.step_time, 6));
  EXPECT_EQ(e["basis"], stated.basis);
  EXPECT_NEAR(e["per_replica_rps"].get<double>(), l.per_replica_rps / (1 + stated.step_time), 1e-3);
  EXPECT_GE(e["pessimistic"]["replicas"].get<int64_t>(), l.replicas);
  EXPECT_GE(e["pessimistic"]["per_hour"].get<double>(), l.cost.per_hour);
  EXPECT_NE(CapacityText(*r).find("  model error: "), std::string::npos);
}

}  // namespace
}  // namespace fleetplan
