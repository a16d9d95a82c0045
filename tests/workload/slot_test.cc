// Value slots: every syntax parses to the distribution it names, draws follow the
// declared distribution (fixed seeds), caps apply and say so, and bad slots give
// located errors.
#include "fleetplan/workload/slot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <type_traits>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "workload/test_util.h"

namespace fleetplan {
namespace {

using testing::ParseYaml;
using testing::TempDir;

TokenSlot Tokens(const std::string& yaml) {
  auto slot = TokenSlot::Parse(ParseYaml("tokens: " + yaml)["tokens"]);
  EXPECT_TRUE(slot.ok()) << (slot.ok() ? "" : slot.status().message());
  return *slot;
}

std::string TokensError(const std::string& yaml) {
  auto slot = TokenSlot::Parse(ParseYaml("tokens: " + yaml)["tokens"]);
  EXPECT_FALSE(slot.ok());
  return slot.ok() ? "" : slot.status().message();
}

std::vector<int64_t> Draw(const TokenSlot& slot, int n, uint64_t seed = 7) {
  RngStream rng(seed, "slot-test");
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(slot.Sample(rng));
  return out;
}

// Kolmogorov-Smirnov distance between integer draws (continuous draws rounded up) and
// the continuous CDF F: P(ceil(X) <= k) = F(k), so the sup is attained at integers.
template <typename Cdf>
double KsDistanceCeil(std::vector<int64_t> draws, Cdf cdf) {
  std::sort(draws.begin(), draws.end());
  const auto n = static_cast<double>(draws.size());
  double d = 0;
  for (size_t i = 0; i < draws.size();) {
    size_t j = i;
    while (j < draws.size() && draws[j] == draws[i]) ++j;
    const double f = cdf(static_cast<double>(draws[i]));
    d = std::max({d, std::abs(static_cast<double>(j) / n - f), std::abs(static_cast<double>(i) / n - cdf(static_cast<double>(draws[i] - 1)))});
    i = j;
  }
  return d;
}

// 99.9% critical value of the one-sample KS statistic for n draws.
double KsCritical(size_t n) { return 1.95 / std::sqrt(static_cast<double>(n)); }

TEST(TokenSlotTest, FixedValueIsExactAndDrawsNothing) {
  const TokenSlot slot = Tokens("1500");
  EXPECT_TRUE(slot.is_fixed());
  RngStream a(1, "x"), b(1, "x");
  EXPECT_EQ(slot.Sample(a), 1500);
  EXPECT_EQ(a.NextU64(), b.NextU64());  // the stream did not move
  EXPECT_EQ(slot.Describe(), Json(1500));
}

TEST(TokenSlotTest, UniformIsIntegerAndInclusive) {
  const auto draws = Draw(Tokens("{uniform: [3, 6]}"), 40000);
  std::map<int64_t, int> counts;
  for (int64_t v : draws) ++counts[v];
  ASSERT_EQ(counts.size(), 4u);
  EXPECT_EQ(counts.begin()->first, 3);
  EXPECT_EQ(counts.rbegin()->first, 6);
  for (const auto& [v, c] : counts) EXPECT_NEAR(c / 40000.0, 0.25, 0.01) << v;
}

TEST(TokenSlotTest, LognormalMatchesItsCdf) {
  const TokenSlot slot = Tokens("{lognormal: {median: 300, p99: 2000}}");
  const auto& dist = std::get<Lognormal>(slot.distribution());
  const auto draws = Draw(slot, 20000);
  EXPECT_LT(KsDistanceCeil(draws, [&](double x) { return dist.Cdf(x); }), KsCritical(draws.size()));
}

TEST(TokenSlotTest, ExponentialAndGammaMatchTheirCdfs) {
  for (const std::string yaml : {"{exponential: {mean: 400}}", "{gamma: {mean: 400, cv: 2}}", "{gamma: {mean: 400, cv: 0.5}}"}) {
    const TokenSlot slot = Tokens(yaml);
    const auto draws = Draw(slot, 20000);
    const double d = std::visit(
        [&](const auto& dist) -> double {
          using D = std::decay_t<decltype(dist)>;
          if constexpr (std::is_same_v<D, Exponential> || std::is_same_v<D, Gamma>) {
            return KsDistanceCeil(draws, [&](double x) { return dist.Cdf(x); });
          } else {
            return 1.0;
          }
        },
        slot.distribution());
    EXPECT_LT(d, KsCritical(draws.size())) << yaml;
  }
}

TEST(TokenSlotTest, ZipfRanksFollowTheirProbabilities) {
  const TokenSlot slot = Tokens("{zipf: {n: 10, s: 1.2}}");
  const auto& zipf = std::get<Zipf>(slot.distribution());
  const auto draws = Draw(slot, 50000);
  std::map<int64_t, int> counts;
  for (int64_t v : draws) ++counts[v];
  for (int64_t k = 1; k <= 10; ++k) {
    const double p = zipf.Probability(k);
    const double sigma = std::sqrt(p * (1 - p) / 50000.0);
    EXPECT_NEAR(counts[k] / 50000.0, p, 4.5 * sigma) << k;
  }
}

TEST(TokenSlotTest, MaxCapsAndReportsCapping) {
  const TokenSlot slot = Tokens("{lognormal: {median: 200, p99: 300}, max: 300}");
  EXPECT_EQ(slot.cap(), 300);
  RngStream rng(3, "cap");
  int capped = 0;
  for (int i = 0; i < 20000; ++i) {
    bool was = false;
    const int64_t v = slot.Sample(rng, &was);
    ASSERT_LE(v, 300);
    ASSERT_GE(v, 1);
    if (was) {
      ++capped;
      EXPECT_EQ(v, 300);
    }
  }
  // P(X > 300) = 1% by construction (300 is the p99).
  EXPECT_NEAR(capped / 20000.0, 0.01, 0.003);
}

TEST(TokenSlotTest, EmpiricalFromPlainFileAndCsvColumn) {
  TempDir dir;
  dir.Write("lengths.txt", "# prompt lengths\n10\n\n20\n  30  \n");
  dir.Write("t.csv", "a,b\n1,100\n2,200\n");
  const std::string yaml_path = dir.File("s.yaml");
  dir.Write("s.yaml", "a: {empirical: lengths.txt}\nb: {empirical: {file: t.csv, column: b}}\n");
  auto doc = YamlDocument::LoadFile(yaml_path);
  ASSERT_TRUE(doc.ok());
  auto plain = TokenSlot::Parse(doc->root()["a"]);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(std::get<Empirical>(plain->distribution()).size(), 3u);
  EXPECT_DOUBLE_EQ(plain->UncappedMean(), 20.0);
  auto column = TokenSlot::Parse(doc->root()["b"]);
  ASSERT_TRUE(column.ok()) << column.status().message();
  std::set<int64_t> seen;
  RngStream rng(1, "e");
  for (int i = 0; i < 200; ++i) seen.insert(column->Sample(rng));
  EXPECT_EQ(seen, (std::set<int64_t>{100, 200}));
}

TEST(TokenSlotTest, EmpiricalBadValueIsLocatedInTheDataFile) {
  TempDir dir;
  const std::string data = dir.Write("lengths.txt", "10\nabc\n");
  const std::string yaml = dir.Write("s.yaml", "a: {empirical: lengths.txt}\n");
  auto doc = YamlDocument::LoadFile(yaml);
  ASSERT_TRUE(doc.ok());
  auto slot = TokenSlot::Parse(doc->root()["a"]);
  ASSERT_FALSE(slot.ok());
  EXPECT_EQ(slot.status().message(),
            data + ":2:1: expected a positive number, got 'abc'\n    2 | abc\n      | ^\n");
}

TEST(TokenSlotTest, ErrorsAreLocatedAndSayWhatWasExpected) {
  EXPECT_EQ(TokensError("0"), "test.yaml:1:9: tokens: expected an integer >= 1, got 0\n"
                              "    1 | tokens: 0\n      |         ^\n");
  EXPECT_EQ(TokensError("{uniform: [5, 3]}"),
            "test.yaml:1:19: tokens.uniform: expected lo <= hi, got [5, 3]\n"
            "    1 | tokens: {uniform: [5, 3]}\n      |                   ^\n");
  EXPECT_EQ(TokensError("{lognormal: {median: 300}}"),
            "test.yaml:1:21: tokens.lognormal: missing required field 'p99'\n"
            "    1 | tokens: {lognormal: {median: 300}}\n      |                     ^\n");
  EXPECT_EQ(TokensError("{max: 5}"),
            "test.yaml:1:9: tokens: expected exactly one distribution (uniform, lognormal, exponential, gamma, "
            "zipf, empirical), got none\n    1 | tokens: {max: 5}\n      |         ^\n");
  EXPECT_NE(TokensError("{lognormall: {median: 1, p99: 2}}").find("did you mean 'lognormal'?"), std::string::npos);
  EXPECT_NE(TokensError("{uniform: [1, 2], exponential: {mean: 3}}").find("got uniform and exponential"),
            std::string::npos);
  EXPECT_NE(TokensError("[1, 2]").find("expected a token count (an integer >= 1) or a distribution map"),
            std::string::npos);
}

TEST(DurationSlotTest, DurationsCarryUnits) {
  auto fixed = DurationSlot::Parse(ParseYaml("t: 250ms")["t"]);
  ASSERT_TRUE(fixed.ok());
  RngStream rng(1, "d");
  EXPECT_EQ(fixed->Sample(rng), Ms(250));

  auto expo = DurationSlot::Parse(ParseYaml("t: {exponential: {mean: 2s}, max: 5s}")["t"]);
  ASSERT_TRUE(expo.ok()) << expo.status().message();
  double sum = 0;
  int capped = 0;
  for (int i = 0; i < 20000; ++i) {
    bool was = false;
    const Duration d = expo->Sample(rng, &was);
    ASSERT_LE(d, Sec(5));
    capped += was ? 1 : 0;
    sum += d.seconds();
  }
  // Mean of min(X, 5) for X ~ Exp(mean 2): 2 * (1 - e^-2.5) = 1.8358.
  EXPECT_NEAR(sum / 20000, 2 * (1 - std::exp(-2.5)), 0.04);
  EXPECT_NEAR(capped / 20000.0, std::exp(-2.5), 0.006);

  auto bad = DurationSlot::Parse(ParseYaml("t: {zipf: {n: 3, s: 1}}")["t"]);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("zipf draws integer ranks; it is only for token counts"), std::string::npos);
  auto unitless = DurationSlot::Parse(ParseYaml("t: {uniform: [1, 2]}")["t"]);
  ASSERT_FALSE(unitless.ok());
  EXPECT_NE(unitless.status().message().find("t.uniform[0]"), std::string::npos);
}

}  // namespace
}  // namespace fleetplan
