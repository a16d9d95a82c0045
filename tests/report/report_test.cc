// The HTML report pieces (report/svg.h, page.h) and the simulation page
// (simulation_page.h): escaping, numbers, CDFs from histograms, charts that carry their
// data, a page that holds every section, loads nothing from elsewhere and is
// byte-identical for the same report; the sweep page of a capped page view.
#include <gtest/gtest.h>

#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "fleet/fleet_scenarios.h"
#include "fleetplan/fleet/run.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/report/page.h"
#include "fleetplan/report/simulation_page.h"
#include "fleetplan/report/svg.h"
#include "fleetplan/report/sweep_page.h"

namespace fleetplan::report {
namespace {

TEST(Page, EscapesTextAndAttributes) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  const Page page{"<t>", "s&", {{"one", "O<ne>", "<p>x</p>"}}};
  const std::string html = RenderPage(page);
  EXPECT_NE(html.find("<title>&lt;t&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"one\"><h2>O&lt;ne&gt;</h2>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"#one\">O&lt;ne&gt;</a>"), std::string::npos);
  EXPECT_NE(html.find("<p>x</p>"), std::string::npos);  // bodies are HTML already
}

TEST(Page, TableRightAlignsNumbers) {
  const std::string t = HtmlTable({"a", "b"}, {{"x", "12.5"}, {"-", "-3"}});
  EXPECT_EQ(t,
            "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>x</td><td class=\"n\">12.5</td>"
            "</tr><tr><td class=\"n\">-</td><td class=\"n\">-3</td></tr></tbody></table>");
}

TEST(Svg, FormatNumberKeepsSignificantDigits) {
  EXPECT_EQ(FormatNumber(0), "0");
  EXPECT_EQ(FormatNumber(1234.5678), "1235");
  EXPECT_EQ(FormatNumber(1234.5678, 6), "1234.57");
  EXPECT_EQ(FormatNumber(0.012345), "0.0123");
  EXPECT_EQ(FormatNumber(2.5), "2.5");
  EXPECT_EQ(FormatNumber(-40), "-40");
  EXPECT_EQ(FormatNumber(3e-7), "3e-07");
  EXPECT_EQ(FormatNumber(std::numeric_limits<double>::quiet_NaN()), "-");
}

TEST(Svg, CdfOfHistogramIsTheShareAtOrBelowEachEdge) {
  // Edges 1, 2, 5, 10; counts per bucket (upper-inclusive) plus the overflow bucket.
  const std::vector<double> edges = {1, 2, 5, 10};
  const std::vector<int64_t> counts = {0, 0, 2, 1, 1};
  const Line l = CdfOfHistogram("c", edges, counts, 3);
  // Leading empty edges are dropped but one (the curve starts at 0); the overflow
  // keeps the line below 1.
  EXPECT_EQ(l.x, (std::vector<double>{2, 5, 10}));
  EXPECT_EQ(l.y, (std::vector<double>{0, 0.5, 0.75}));
  EXPECT_TRUE(l.step);
  EXPECT_EQ(l.color, 3);
  // Stops at the first edge with everything at or below it.
  const Line full = CdfOfHistogram("c", edges, std::vector<int64_t>{1, 1, 0, 0, 0}, 0);
  EXPECT_EQ(full.x, (std::vector<double>{1, 2}));
  EXPECT_EQ(full.y, (std::vector<double>{0.5, 1}));
  EXPECT_TRUE(CdfOfHistogram("c", edges, std::vector<int64_t>{0, 0, 0, 0, 0}, 0).x.empty());
}

TEST(Svg, LineChartDrawsEveryLineMarkerAndLegend) {
  ChartFrame f;
  f.title = "T<1>";
  f.x_label = "x";
  f.y_label = "y";
  const std::vector<Line> lines = {{"a", {0, 1, 2}, {0, 5, 3}, 0, false, false, false, false, {}},
                                   {"b", {0, 2}, {1, 1}, 1, true, true, false, false, {}}};
  const std::vector<Marker> markers = {{1.5, "limit", 2}};
  const std::string svg = LineChart(f, lines, markers);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
  EXPECT_NE(svg.find("<title>T&lt;1&gt;</title>"), std::string::npos);
  const std::regex polyline("<polyline points=\"([^\"]*)\"");
  std::vector<std::string> points;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), polyline); it != std::sregex_iterator(); ++it) {
    points.push_back((*it)[1]);
  }
  ASSERT_EQ(points.size(), 2u);
  // Three points for a; the step line b holds its value: two points plus the corner.
  EXPECT_EQ(std::count(points[0].begin(), points[0].end(), ','), 3);
  EXPECT_EQ(std::count(points[1].begin(), points[1].end(), ','), 3);
  EXPECT_NE(svg.find("stroke-dasharray=\"5 3\""), std::string::npos);
  EXPECT_NE(svg.find(">limit</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>a</title>"), std::string::npos);
  EXPECT_NE(svg.find(">b</text>"), std::string::npos);  // the legend
  EXPECT_EQ(svg, LineChart(f, lines, markers)) << "deterministic";
}

TEST(Svg, DotsDrawACircleAtEveryPointWithItsOwnTooltipAndNoLineWhenAsked) {
  ChartFrame f;
  const std::vector<Line> scatter = {{"all", {1, 2, 3}, {3, 1, 2}, 0, false, false, true, true, {"p1", "p2", "p3"}},
                                     {"front", {1, 3}, {3, 2}, 1, false, false, true, false, {}}};
  const std::string svg = LineChart(f, scatter);
  const std::regex circle("<circle ");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), circle), std::sregex_iterator()), 5);
  const std::regex polyline("<polyline ");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), polyline), std::sregex_iterator()), 1);
  for (const char* tip : {"<title>p1</title>", "<title>p2</title>", "<title>p3</title>", "<title>front</title>"}) {
    EXPECT_NE(svg.find(tip), std::string::npos) << tip;
  }
}

TEST(Svg, LogAxisLeavesOutNonPositiveValues) {
  ChartFrame f;
  f.log_x = true;
  const std::vector<Line> lines = {{"a", {0, 10, 1000}, {0, 0.5, 1}, 0, false, false, false, false, {}}};
  const std::string svg = LineChart(f, lines);
  const std::smatch m = [&] {
    std::smatch out;
    std::regex_search(svg, out, std::regex("<polyline points=\"([^\"]*)\""));
    return out;
  }();
  ASSERT_FALSE(m.empty());
  const std::string pts = m[1];
  EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 2);
  // A tick per decade, 10 to 1000.
  for (const char* label : {">10<", ">100<", ">1000<"}) EXPECT_NE(svg.find(label), std::string::npos) << label;
}

TEST(Svg, NonFiniteValuesAreLeftOut) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ChartFrame f;
  const std::vector<Line> lines = {{"a", {0, 1, 2}, {1, nan, 3}, 0, false, false, false, false, {}}};
  const std::string line = LineChart(f, lines, std::vector<Marker>{{nan, "m", 0}});
  EXPECT_EQ(line.find("nan"), std::string::npos);
  EXPECT_EQ(line.find(">m</text>"), std::string::npos);
  const std::vector<std::string> series = {"v"};
  const std::vector<BarGroup> groups = {{"g", {nan}, nan}, {"h", {2}, std::nullopt}};
  const std::string bars = BarChart(f, series, groups);
  EXPECT_EQ(bars.find("nan"), std::string::npos);
  EXPECT_EQ(bars.find("<title>g v:"), std::string::npos);
  EXPECT_NE(bars.find("<title>h v: 2</title>"), std::string::npos);
}

TEST(Svg, BarChartDrawsABarPerValueAndTargets) {
  ChartFrame f;
  const std::vector<std::string> series = {"p50", "p99"};
  const std::vector<BarGroup> groups = {{"<=128", {1, 2}, 1.5}, {">128", {3, 4}, std::nullopt}};
  const std::string svg = BarChart(f, series, groups);
  const std::regex bar("<rect [^>]*><title>");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), bar), std::sregex_iterator()), 4);
  EXPECT_NE(svg.find("&lt;=128 target: 1.5"), std::string::npos);
  EXPECT_NE(svg.find("&gt;128 p99: 4"), std::string::npos);
}

// A small run with pools, so every section has something to show.
Json PoolsReport() {
  const std::string text =
      "version: 1\nname: pools-page\nseed: 2\n"
      "model: {name: llama-3.1-8b, max_context: 32768}\n"
      "hardware: {gpu: h100-sxm-80g, nodes: 1, gpus_per_node: 4}\n"
      "deployment:\n"
      "  pools:\n"
      "    - {role: prefill, replicas: 1, tp: 1}\n"
      "    - {role: decode, replicas: 2, tp: 1}\n"
      "  disaggregation: {colocate_below_tokens: 2000, setup: 1ms}\n"
      "engine:\n"
      "  step_model: {kind: affine, prefill: {base: 8ms, per_token: 0.02ms}, decode: {base: 10ms, per_seq: 0.1ms}}\n"
      "  prefix_cache: {enabled: true}\n"
      "workload:\n"
      "  requests: 80\n"
      "  arrival: {process: poisson, rate: 10/s}\n"
      "  tenants: {count: 2}\n"
      "  classes:\n"
      "    chat:\n"
      "      share: 1\n"
      "      prompt: [{segment: tenant-instructions, tokens: 1000}, {segment: unique, tokens: {uniform: [500, "
      "4000]}}]\n"
      "      output_tokens: {uniform: [10, 300]}\n"
      "slo:\n"
      "  chat: {ttft: 400ms, e2e_by_output: [{max_output: 100, e2e: 3s}, {e2e: 10s}]}\n";
  auto r = testing::RunReport(text);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Json();
}

// A sweep page view with `shown` of `of` configurations (the page reads only what it has).
Json SweepView(int64_t shown, int64_t of) {
  Json configs = Json::array();
  for (int64_t c = 0; c < shown; ++c) {
    configs.push_back({{"configuration", c},
                       {"gpus", 2},
                       {"values", {{"deployment.replicas", c + 1}}},
                       {"figures", {{"fleet.goodput_per_gpu", {{"mean", 1.0}}}}}});
  }
  return {{"kind", "fleetplan-sweep"},
          {"spec", {{"name", "s"}, {"configurations", of}, {"seeds", {1}}, {"points", of}}},
          {"configurations", configs},
          {"points", Json::array()},
          {"shown", {{"configurations", shown}, {"of", of}}}};
}

TEST(SweepPage, SaysWhenItShowsOnlyTheFirstConfigurations) {
  const std::string capped = SweepHtml(SweepView(2, 5000));
  const std::string note = "The first 2 of 5000 configurations; every one is in sweep.json and sweep.csv.";
  size_t count = 0;
  for (size_t at = capped.find(note); at != std::string::npos; at = capped.find(note, at + 1)) ++count;
  EXPECT_EQ(count, 2u);  // in the configurations table and under the Pareto plot
  EXPECT_NE(capped.find("deployment.replicas=2"), std::string::npos);  // the shown ones are listed
  const std::string whole = SweepHtml(SweepView(3, 3));
  EXPECT_EQ(whole.find("configurations; every one is in sweep.json"), std::string::npos);
}

TEST(SimulationPage, HasEverySectionInOrder) {
  const Json report = PoolsReport();
  const std::string html = SimulationHtml(report);
  size_t at = 0;
  for (const SectionRow& row : SimulationSections()) {
    const size_t found = html.find("<section id=\"" + std::string(row.id) + "\">");
    ASSERT_NE(found, std::string::npos) << row.id;
    EXPECT_GT(found, at) << row.id << " out of order";
    at = found;
  }
  // What the run used shows: the SLO threshold, the pools' stages, the cache, the series.
  EXPECT_NE(html.find("chat TTFT 400 ms"), std::string::npos);
  EXPECT_NE(html.find("transfer (KV moving)"), std::string::npos);
  EXPECT_NE(html.find("Pools: fleet queues"), std::string::npos);
  EXPECT_NE(html.find("r0 prefill"), std::string::npos);
  EXPECT_EQ(html.find("The prefix cache made no lookups"), std::string::npos);
  EXPECT_NE(html.find(report["scenario"]["digest"].get<std::string>()), std::string::npos);
}

TEST(SimulationPage, LoadsNothingFromElsewhere) {
  const std::string html = SimulationHtml(PoolsReport());
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
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
}

TEST(SimulationPage, SameReportSameBytes) {
  EXPECT_EQ(SimulationHtml(PoolsReport()), SimulationHtml(PoolsReport()));
}

TEST(SimulationPage, SectionsOfUnusedFeaturesSaySo) {
  Json report = PoolsReport();
  report.erase("disaggregation");
  report["fleet"]["prefix_cache"]["lookups"] = 0;
  report.erase("timeseries");
  const std::string html = SimulationHtml(report);
  EXPECT_NE(html.find("No prefill pool in this scenario"), std::string::npos);
  EXPECT_NE(html.find("The prefix cache made no lookups"), std::string::npos);
  EXPECT_NE(html.find("This report has no time series."), std::string::npos);
  for (const SectionRow& row : SimulationSections()) {
    EXPECT_NE(html.find("<section id=\"" + std::string(row.id) + "\">"), std::string::npos) << row.id;
  }
}

}  // namespace
}  // namespace fleetplan::report
