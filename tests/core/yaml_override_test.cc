#include <gtest/gtest.h>

#include "fleetplan/core/yaml.h"

namespace fleetplan {
namespace {

YamlDocument Load(std::string_view text, const char* name) {
  auto doc = YamlDocument::LoadString(text, name);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  return *doc;
}

constexpr std::string_view kBase =
    "deployment:\n"
    "  replicas: 4\n"
    "  pools:\n"
    "    - {role: prefill, replicas: 2}\n"
    "    - {role: decode, replicas: 2}\n"
    "router: {policy: round-robin}\n";

TEST(YamlOverride, ReplacesAValueAndKeepsTheRestShared) {
  const YamlDocument base = Load(kBase, "base.yaml");
  const YamlDocument spec = Load("axes:\n  deployment.replicas: [2, 8]\n", "spec.yaml");
  auto items = spec.root()["axes"]["deployment.replicas"].Items();
  ASSERT_TRUE(items.ok());
  auto doc = YamlDocument::WithOverrides(base, {{"deployment.replicas", (*items)[1]}});
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(*doc->root()["deployment"]["replicas"].AsInt(), 8);
  EXPECT_EQ(*doc->root()["router"]["policy"].AsString(), "round-robin");
  // The base document is unchanged.
  EXPECT_EQ(*base.root()["deployment"]["replicas"].AsInt(), 4);
  // The overridden value is located in the spec; the others in the base.
  EXPECT_EQ(doc->root()["deployment"]["replicas"].location().file, "spec.yaml");
  EXPECT_EQ(doc->root()["deployment"]["replicas"].location().line, 2);
  EXPECT_EQ(doc->root()["router"]["policy"].location().file, "base.yaml");
  EXPECT_EQ(doc->root()["router"]["policy"].location().line, 6);
}

TEST(YamlOverride, AnErrorAboutAnOverriddenValuePointsAtTheOverride) {
  const YamlDocument base = Load(kBase, "base.yaml");
  const YamlDocument spec = Load("x: {a: 1}\nv: many\n", "spec.yaml");
  auto doc = YamlDocument::WithOverrides(base, {{"deployment.replicas", spec.root()["v"]}});
  ASSERT_TRUE(doc.ok());
  const Status s = doc->root()["deployment"]["replicas"].AsInt().status();
  EXPECT_NE(s.message().find("spec.yaml:2:4"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("deployment.replicas"), std::string::npos) << s.message();
}

TEST(YamlOverride, SetsSequenceElementsAndAddsAbsentKeys) {
  const YamlDocument base = Load(kBase, "base.yaml");
  const YamlDocument spec = Load("a: 5\nb: fp8\n", "spec.yaml");
  auto doc = YamlDocument::WithOverrides(
      base, {{"deployment.pools[1].replicas", spec.root()["a"]}, {"model.kv_dtype", spec.root()["b"]}});
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto pools = doc->root()["deployment"]["pools"].Items();
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(*(*pools)[0]["replicas"].AsInt(), 2);
  EXPECT_EQ(*(*pools)[1]["replicas"].AsInt(), 5);
  EXPECT_EQ(*(*pools)[1]["role"].AsString(), "decode");
  EXPECT_EQ(*doc->root()["model"]["kv_dtype"].AsString(), "fp8");
  // Applied in order: a later override of the same path wins.
  auto twice = YamlDocument::WithOverrides(base, {{"router.policy", spec.root()["a"]}, {"router.policy", spec.root()["b"]}});
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(*twice->root()["router"]["policy"].AsString(), "fp8");
}

TEST(YamlOverride, RejectsPathsThatCannotBeSet) {
  const YamlDocument base = Load(kBase, "base.yaml");
  const YamlDocument spec = Load("a: 5\n", "spec.yaml");
  const YamlNode v = spec.root()["a"];
  for (const char* path : {"deployment.replicas.x", "deployment.pools[2].replicas", "router[0]", "a..b", "a[x]",
                           "", "a.", "[1]"}) {
    auto doc = YamlDocument::WithOverrides(base, {{path, v}});
    ASSERT_FALSE(doc.ok()) << path;
    EXPECT_EQ(doc.status().code(), StatusCode::kInvalidInput) << path;
    EXPECT_NE(doc.status().message().find("spec.yaml:1:4"), std::string::npos) << doc.status().message();
  }
}

TEST(YamlOverride, DerivedScalarsAreLocatedWhereTheirSourceIs) {
  const YamlDocument spec = Load("axes:\n  rate: {from: 2/s, to: 8/s, step: 2/s}\n", "spec.yaml");
  const YamlDocument v = YamlDocument::Scalar("4/s", spec.root()["axes"]["rate"]);
  EXPECT_EQ(v.root().Text(), "4/s");
  EXPECT_DOUBLE_EQ(v.root().AsRate()->per_second, 4.0);
  EXPECT_EQ(v.root().location().file, "spec.yaml");
  EXPECT_EQ(v.root().location().line, 2);
}

}  // namespace
}  // namespace fleetplan
