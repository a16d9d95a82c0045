// engine.version: parsing, the generation of each release, and the default host overhead
// each generation implies (perf/engine_version.h).
#include "fleetplan/perf/engine_version.h"

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(EngineVersion, ParsesMajorMinorAndPatch) {
  const auto v = ParseEngineVersion("0.10.2");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->major, 0);
  EXPECT_EQ(v->minor, 10);
  EXPECT_EQ(v->patch, 2);
  EXPECT_EQ(v->text, "0.10.2");
  const auto w = ParseEngineVersion("v0.6");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->minor, 6);
  EXPECT_EQ(w->patch, 0);
}

TEST(EngineVersion, RefusesWhatIsNotAVersion) {
  for (const char* bad : {"", "0", "0.", ".1", "0.10.2.1", "0.x", "latest", "-1.2", "0.99999", "0.1 "}) {
    const auto v = ParseEngineVersion(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().message(),
              std::string("expected a vLLM version MAJOR.MINOR[.PATCH] such as 0.10.2, got '") + bad + "'");
  }
}

TEST(EngineVersion, GenerationsChangeAt0_8And0_12) {
  const auto gen = [](const char* text) { return ParseEngineVersion(text).value().generation(); };
  EXPECT_EQ(gen("0.6.3"), VllmGeneration::kV0);
  EXPECT_EQ(gen("0.7.3"), VllmGeneration::kV0);
  EXPECT_EQ(gen("0.8.0"), VllmGeneration::kV1);
  EXPECT_EQ(gen("0.11.2"), VllmGeneration::kV1);
  EXPECT_EQ(gen("0.12.0"), VllmGeneration::kV1Async);
  EXPECT_EQ(gen("1.0"), VllmGeneration::kV1Async);
  EXPECT_EQ(gen(std::string(kDefaultEngineVersion).c_str()), VllmGeneration::kV1);
}

TEST(EngineVersion, DefaultHostOverheadPerGeneration) {
  const auto host = [](const char* text, int64_t tp) {
    return DefaultHostOverhead(ParseEngineVersion(text).value(), tp);
  };
  EXPECT_EQ(host("0.6.3", 1).per_step, Duration::Nanos(1'322'000));
  EXPECT_EQ(host("0.6.3", 4).per_step, Duration::Nanos(1'322'000 + 3 * 555'000));
  EXPECT_EQ(host("0.10.2", 8).per_step, Duration::Nanos(1'322'000));
  EXPECT_EQ(host("0.12", 8).per_step, Duration());
  EXPECT_TRUE(host("0.6.3", 4).constant());
}

}  // namespace
}  // namespace fleetplan
