// core/digest.h: SHA-256 against the FIPS 180-2 test vectors; streaming equals one-shot;
// JSON digests are of the canonical form.
#include "fleetplan/core/digest.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(Sha256Test, StandardVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, DigestHasPrefix) {
  EXPECT_EQ(DigestOf("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256StreamTest, AnyChunkingGivesTheOneShotDigest) {
  const std::string text = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  for (std::size_t chunk = 1; chunk <= text.size(); chunk += 7) {
    Sha256Stream s;
    for (std::size_t i = 0; i < text.size(); i += chunk) s.Update(std::string_view(text).substr(i, chunk));
    EXPECT_EQ(s.FinishDigest(), DigestOf(text)) << "chunk " << chunk;
  }
  Sha256Stream empty;
  EXPECT_EQ(empty.FinishDigest(), DigestOf(""));
}

TEST(Sha256StreamDeathTest, UseAfterFinishIsABug) {
  EXPECT_DEATH(
      {
        Sha256Stream s;
        (void)s.FinishDigest();
        s.Update("x");
      },
      "assertion failed");
}

TEST(DigestOfJsonTest, DigestsTheCanonicalForm) {
  Json a;
  a["b"] = 1;
  a["a"] = Json::array({1.5, "x"});
  Json b;
  b["a"] = Json::array({1.5, "x"});
  b["b"] = 1;
  const Expected<std::string> da = DigestOfJson(a);
  ASSERT_TRUE(da.ok());
  EXPECT_EQ(*da, DigestOf(R"({"a":[1.5,"x"],"b":1})"));
  EXPECT_EQ(*DigestOfJson(b), *da);
  b["b"] = 2;
  EXPECT_NE(*DigestOfJson(b), *da);
}

TEST(DigestOfJsonTest, NonFiniteIsAnError) {
  Json j;
  j["x"] = std::nan("");
  const Expected<std::string> d = DigestOfJson(j);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInternal);
  EXPECT_EQ(d.status().message(), "cannot write JSON: NaN has no JSON form (at JSON pointer '/x')");
}

}  // namespace
}  // namespace fleetplan
