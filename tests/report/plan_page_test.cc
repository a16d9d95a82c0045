// The plan page (report/plan_page.h) over plan_fixture.json: the built-in Atlas plan's
// plan.json at 2026-12-01T00:00:00Z (a hold at canary-1), trimmed to a few of each list.
// It checks the decision comes first with its deciding reasons (gate, numbers, nearest
// passing), every section in order, the fleet's and the simulation's bars, the stage the
// rollout stopped at highlighted, the digest, a page that loads nothing from elsewhere and
// is byte-identical for the same plan, and parts a failed plan did not reach saying so.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "support/build_paths.h"
#include "fleetplan/core/json.h"
#include "fleetplan/report/plan_page.h"

namespace fleetplan::report {
namespace {

Json Fixture() {
  std::ifstream in(std::string(FLEETPLAN_SOURCE_DIR) + "/tests/report/plan_fixture.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// The fixture as a plan whose workload lacks a class the policy requires: the release
// fails on coverage, so no fleet is sized, simulated or perturbed.
Json FailedOnCoverage() {
  Json plan = Fixture();
  const Json coverage = {
      {"decision", "fail"},
      {"name", "coverage"},
      {"nearest_passing", "workload classes include research"},
      {"numbers", {{"missing", {"research"}}, {"required", {"interactive", "document", "research"}}}},
      {"reason", "the workload evidence lacks the class research that the policy requires"}};
  plan["decision"]["release"] = "fail";
  plan["decision"]["summary"] =
      "release fail: fp8-w8a8 (fp8) advances to staging; rollout hold at canary-1 (1% traffic)";
  plan["decision"]["reasons"] = Json::array({coverage});
  plan["checks"] = Json::array({coverage});
  plan["capacity"] = nullptr;
  plan["simulation"] = nullptr;
  plan["sensitivity"] = Json::array();
  plan["review_triggers"] = Json::array();
  plan["digest"] = "sha256:3e8f664bad6ac66e922df7bc36775c62dabdec78c3180c3a15eca84997c9229a";
  return plan;
}

size_t Section(const std::string& html, std::string_view id) {
  return html.find("<section id=\"" + std::string(id) + "\">");
}

TEST(PlanPage, HasEverySectionInOrderWithTheDecisionFirst) {
  const std::string html = PlanHtml(Fixture());
  ASSERT_EQ(PlanSections().front().id, "decision");
  size_t at = 0;
  for (const SectionRow& row : PlanSections()) {
    const size_t found = Section(html, row.id);
    ASSERT_NE(found, std::string::npos) << row.id;
    EXPECT_GT(found, at) << row.id << " out of order";
    at = found;
  }
  // The release in large type, then the summary, then the deciding reason with its gate.
  const size_t release = html.find(R"(<p class="verdict release warn" id="release">Release: hold</p>)");
  ASSERT_NE(release, std::string::npos);
  EXPECT_LT(release, Section(html, "checks"));
  EXPECT_NE(html.find("<p>release hold: tp8 on h100-sxm-80g (1 per 8-GPU node), 36 replicas across 4 domains"),
            std::string::npos);
  EXPECT_NE(html.find("<h3>Deciding reasons</h3>"), std::string::npos);
  EXPECT_NE(html.find(R"(<td><span class="badge hold">hold</span></td><td>rollout</td><td><span>hold at canary-1 (1% )"
                      R"(traffic): canary-1: ttft_ms: no data to decide on)"),
            std::string::npos);
  EXPECT_NE(html.find("<td>decision=hold; stage=canary-1; traffic=0.01</td>"), std::string::npos);
  EXPECT_NE(html.find("<code>sha256:76197dba191d5c1fd05ae8c4f2ac41eeeadebb0e48aef652543df13a7855ad62</code>"),
            std::string::npos);
}

TEST(PlanPage, ShowsTheFleetTheSimulationAndTheLadder) {
  const std::string html = PlanHtml(Fixture());
  // Inputs: the revision, the content digest and the freshness with its expiry.
  EXPECT_NE(html.find("<td>inventory.yaml</td><td>inventory</td><td>evidence</td><td>the content digest</td>"
                      "<td><code>sha256:fed732d2f5619344892705802948f9310dbbb81564289bfacbd96b7f639504c2</code></td>"
                      R"(<td><span class="badge pass">fresh</span> expires 2026-12-12T06:00:00Z<br>)"
                      R"(<span class="muted">observed 2026-11-28T06:00:00Z</span></td>)"
                      "<td>cluster inventory export, us-east and us-west</td>"),
            std::string::npos);
  // Replicas per domain as bars, the chosen candidate marked.
  EXPECT_NE(html.find("<title>us-east-a replicas: 9</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>us-west-b replicas: 5</title>"), std::string::npos);
  EXPECT_NE(html.find("<td>tp8 <strong>(chosen)</strong></td>"), std::string::npos);
  EXPECT_NE(html.find("$988.8/h ($721824/month). The size is set by domain:us-east-a"), std::string::npos);
  // Attainment per class against the policy's targets.
  EXPECT_NE(html.find("<title>interactive attainment: 100%</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>interactive target: 99%</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>research target: 90%</title>"), std::string::npos);
  // The ladder: the stage it stopped at is the highlighted row and the heavy box.
  EXPECT_NE(html.find(R"(<tr class="at"><td>canary-1 (stopped here)</td><td class="n">1%</td>)"), std::string::npos);
  EXPECT_NE(html.find("<title>canary-1: hold (the rollout stopped here)</title>"), std::string::npos);
  EXPECT_NE(html.find(R"(<td>canary-10</td><td class="n">10%</td><td>-</td><td><span class="badge none">not reached)"),
            std::string::npos);
  // Sensitivity and the review triggers.
  EXPECT_NE(html.find("<td>peak_traffic</td><td><span>2x</span></td>"), std::string::npos);
  EXPECT_NE(html.find("<td>factor=1.005; peak_per_s=65.32</td>"), std::string::npos);
  EXPECT_NE(html.find("<td><span>a sustained peak above 65.3/s (x1.005 the declared 65/s) needs 37 x tp8"),
            std::string::npos);
}

// The decision at both edges of the step model's stated error, as a chart and a table,
// and each layout's decode step split into collectives and the rest.
TEST(PlanPage, ShowsTheModelErrorBandAndWhyTheLayoutsDiffer) {
  const std::string html = PlanHtml(Fixture());
  const size_t at = Section(html, "model-error");
  ASSERT_NE(at, std::string::npos);
  const std::string section = html.substr(at, Section(html, "simulation") - at);
  EXPECT_NE(section.find("The step model is aiconfigurator on h100-sxm-80g; measured step times ran up to 22.6% longer"),
            std::string::npos) << section.substr(0, 600);
  EXPECT_NE(section.find("The pick is the cheapest at both edges."), std::string::npos);
  EXPECT_NE(section.find("<p>Why: tp8 serves 0.443/s per GPU at the SLO against tp4"), std::string::npos);
  EXPECT_NE(section.find("<title>Fleet cost at each edge of the model&#39;s error (tick: the budget)</title>"), std::string::npos);
  EXPECT_NE(section.find("A decode step, ms (why the layouts differ)"), std::string::npos);
  EXPECT_NE(section.find("<td>pessimistic</td><td>tp8 <strong>(cheapest)</strong></td>"), std::string::npos);
  EXPECT_NE(section.find("<td>tp8</td><td>batch 1</td><td class=\"n\">1</td>"), std::string::npos) << section;
  EXPECT_NE(section.find("<title>tp8 operating point collectives: "), std::string::npos);
  // tp4 does not fit the domains at the pessimistic edge: no bar, and the table says so.
  EXPECT_EQ(section.find("<title>tp4 pessimistic (steps x1.22): "), std::string::npos);
  EXPECT_NE(section.find("<td>pessimistic</td><td>tp4</td><td class=\"n\">0.889</td><td>not sized</td><td class=\"n\">-</td><td class=\"n\">-</td><td class=\"n\">-</td>"), std::string::npos)
      << section;
  // A plan that sized no fleet judged no model error, and says why.
  Json failed = Fixture();
  failed["model_error"] = nullptr;
  failed["capacity"] = nullptr;
  EXPECT_NE(PlanHtml(failed).find("Not judged: "), std::string::npos);
}

TEST(PlanPage, AFailedPlanNamesItsReasonAndWhatItDidNotReach) {
  const std::string html = PlanHtml(FailedOnCoverage());
  EXPECT_NE(html.find(R"(<p class="verdict release bad" id="release">Release: fail</p>)"), std::string::npos);
  EXPECT_NE(
      html.find(R"(<td><span class="badge fail">fail</span></td><td>coverage</td><td><span>the workload evidence )"
                R"(lacks the class research that the policy requires</span></td><td>missing=[research]; )"
                R"(required=[interactive, document, research]</td><td>workload classes include research</td>)"),
      std::string::npos);
  EXPECT_NE(html.find("No fleet was sized: coverage: the workload evidence lacks the class research"),
            std::string::npos);
  EXPECT_NE(html.find("Not simulated: coverage: "), std::string::npos);
  EXPECT_NE(html.find("No perturbation was run: coverage: "), std::string::npos);
  EXPECT_NE(html.find("sha256:3e8f664bad6ac66e922df7bc36775c62dabdec78c3180c3a15eca84997c9229a"), std::string::npos);
  for (const SectionRow& row : PlanSections()) EXPECT_NE(Section(html, row.id), std::string::npos) << row.id;
}

TEST(PlanPage, APlanRunWithoutSensitivitySaysSo) {
  Json plan = Fixture();
  plan["sensitivity"] = Json::array();
  plan["review_triggers"] = Json::array();
  const std::string html = PlanHtml(plan);
  EXPECT_NE(html.find("<p>No perturbation was run (--no-sensitivity).</p>"), std::string::npos);
  EXPECT_NE(html.find("<h3>Review triggers: what would reopen this decision</h3><p>None.</p>"), std::string::npos);
}

TEST(PlanPage, LoadsNothingFromElsewhere) {
  for (const Json& plan : {Fixture(), FailedOnCoverage()}) {
    const std::string html = PlanHtml(plan);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    EXPECT_EQ(html.find("<img"), std::string::npos);
    EXPECT_EQ(html.find("url("), std::string::npos);
    EXPECT_EQ(html.find("@import"), std::string::npos);
    // The one URL is the SVG namespace (an identifier, never fetched).
    std::string rest = html;
    for (size_t p = rest.find("http://www.w3.org/2000/svg"); p != std::string::npos;
         p = rest.find("http://www.w3.org/2000/svg")) {
      rest.erase(p, 26);
    }
    EXPECT_EQ(rest.find("http://"), std::string::npos);
    EXPECT_EQ(rest.find("https://"), std::string::npos);
    EXPECT_EQ(rest.find("src="), std::string::npos);
    EXPECT_EQ(rest.find("href=\"http"), std::string::npos);
    EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  }
}

TEST(PlanPage, SamePlanSameBytes) {
  EXPECT_EQ(PlanHtml(Fixture()), PlanHtml(Fixture()));
  EXPECT_NE(PlanHtml(Fixture()), PlanHtml(FailedOnCoverage()));
}

}  // namespace
}  // namespace fleetplan::report
