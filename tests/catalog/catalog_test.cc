// The catalog: built-in contents, lookups with did-you-mean, and user catalog files (adding,
// overriding, and every kind of bad input, each with its exact located error).
#include "fleetplan/catalog/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "support/build_paths.h"

namespace fleetplan {
namespace {

using ::testing::HasSubstr;

// Writes `text` to a fresh file in the test temp directory and returns its path.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "catalog_test_" + name;
  std::ofstream(path) << text;
  return path;
}

// The message of a failed WithUserFiles over one file with `text`; "" when it loads. The
// file's path is replaced by "FILE" so expectations read like the user sees them.
std::string LoadError(const std::string& text) {
  const std::string path = WriteTemp("error.yaml", text);
  Expected<Catalog> c = Catalog::WithUserFiles({path});
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidInput);
  std::string message = c.status().message();
  for (size_t at = message.find(path); at != std::string::npos; at = message.find(path)) {
    message.replace(at, path.size(), "FILE");
  }
  return message;
}

TEST(Builtin, HasTheListedModels) {
  std::set<std::string> names;
  for (const auto& [name, m] : Catalog::Builtin().models()) {
    names.insert(name);
    EXPECT_EQ(m.name, name);
    EXPECT_FALSE(m.source.empty()) << name;
    EXPECT_FALSE(m.description.empty()) << name;
    EXPECT_GT(m.max_context, 0) << name;
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"atlas-70b", "deepseek-v3", "gemma-2-27b", "llama-3.1-405b",
                                   "llama-3.1-70b", "llama-3.1-8b", "llava-1.5-7b", "mistral-7b",
                                   "mixtral-8x7b", "qwen3-30b-a3b", "qwen3-32b"}));
  EXPECT_TRUE(Catalog::Builtin().overridden().empty());
}

// D6: a source that cites a document of this repository (a path ending in .md) cites one
// that exists; documents beside the checkout are never cited.
TEST(Builtin, SourcesCiteOnlyDocumentsTheRepositoryHas) {
  const std::regex doc(R"(([A-Za-z0-9_./-]+\.md))");
  const auto check = [&](const std::string& name, const std::string& source) {
    for (std::sregex_iterator it(source.begin(), source.end(), doc), end; it != end; ++it) {
      const std::string cited = (*it)[1];
      EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(FLEETPLAN_SOURCE_DIR) / cited))
          << name << " cites " << cited << ", which the repository lacks: " << source;
    }
  };
  for (const auto& [name, m] : Catalog::Builtin().models()) check(name, m.source);
  for (const auto& [name, g] : Catalog::Builtin().gpus()) check(name, g.source);
  for (const auto& [name, l] : Catalog::Builtin().links()) check(name, l.source);
}

TEST(Builtin, ModelsAreListedInNameOrder) {
  std::vector<std::string> names;
  for (const auto& [name, m] : Catalog::Builtin().models()) names.push_back(name);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.front(), "atlas-70b");
}

TEST(Lookup, UnknownModelSuggestsTheNearestAndListsAll) {
  Expected<ModelSpec> m = Catalog::Builtin().Model("lama-3.1-8b");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(m.status().message(),
            "unknown model 'lama-3.1-8b'; did you mean 'llama-3.1-8b'? (valid: atlas-70b, "
            "deepseek-v3, gemma-2-27b, llama-3.1-405b, llama-3.1-70b, llama-3.1-8b, "
            "llava-1.5-7b, mistral-7b, mixtral-8x7b, qwen3-30b-a3b, qwen3-32b)");
}

TEST(Lookup, UnknownGpuAndLink) {
  EXPECT_THAT(Catalog::Builtin().Gpu("h100-sxm-80").status().message(),
              HasSubstr("unknown gpu 'h100-sxm-80'; did you mean 'h100-sxm-80g'?"));
  // Too far from every name for a suggestion: the list alone.
  EXPECT_EQ(Catalog::Builtin().Gpu("tpu-v5").status().message(),
            "unknown gpu 'tpu-v5' (valid: a100-40g, a100-80g, b200-192g, h100-pcie-80g, "
            "h100-sxm-80g, h200-141g, l4, l40s, mi300x, rtx-pro-6000, rtx4090)");
  EXPECT_THAT(Catalog::Builtin().Link("nvlink6").status().message(),
              HasSubstr("unknown link 'nvlink6'; did you mean"));
  EXPECT_TRUE(Catalog::Builtin().Gpu("h100-sxm-80g").ok());
}

TEST(UserFile, AddsAndOverridesEntries) {
  const std::string path = WriteTemp("add.yaml", R"(models:
  tiny:
    description: a test model
    layers: 2
    hidden: 64
    heads: 4
    kv_heads: 2
    head_dim: 16
    intermediate: 128
    vocab: 1000
gpus:
  h100-sxm-80g:
    memory: 80GiB
    memory_bandwidth: 3.35TB/s
    bf16_tflops: 989.5
    fp8_tflops: 1979
    default_intra_link: fastlink
links:
  fastlink: {kind: nvlink, bandwidth: 1TB/s, latency: 500ns}
)");
  Expected<Catalog> c = Catalog::WithUserFiles({path});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ModelSpec tiny = *c->Model("tiny");
  EXPECT_EQ(tiny.layers, 2);
  EXPECT_TRUE(tiny.gated_mlp);
  EXPECT_EQ(tiny.norms_per_layer, 2);
  EXPECT_EQ(tiny.source, "user catalog " + path + ":3");
  // 1000*64*2 embeddings + 2 * (attention 64*(64+2*32) + 64*64, ffn 3*64*128, norms 128) + 64.
  EXPECT_EQ(CountParams(tiny).total(), 128000 + 2 * (12288 + 24576 + 128) + 64);
  const GpuSpec h100 = *c->Gpu("h100-sxm-80g");
  EXPECT_EQ(h100.memory, GiB(80));
  EXPECT_EQ(h100.source, "user catalog " + path + ":13");
  EXPECT_EQ(h100.dtypes, (std::vector<DType>{DType::kBf16, DType::kFp16, DType::kFp32, DType::kInt4,
                                             DType::kFp8}));
  EXPECT_DOUBLE_EQ(c->Link("fastlink")->bandwidth, 1e12);
  EXPECT_EQ(c->Link("fastlink")->latency, Ns(500));
  EXPECT_EQ(c->overridden(), (std::vector<std::string>{"gpus.h100-sxm-80g (" + path + ")"}));
  // The built-in catalog is untouched.
  EXPECT_EQ(Catalog::Builtin().Gpu("h100-sxm-80g")->memory, MiB(81559));
  EXPECT_FALSE(Catalog::Builtin().Model("tiny").ok());
}

TEST(UserFile, LaterFilesOverrideEarlierOnes) {
  const std::string first = WriteTemp("first.yaml", R"(links:
  x: {kind: pcie, bandwidth: 10GB/s, latency: 1us}
)");
  const std::string second = WriteTemp("second.yaml", R"(links:
  x: {kind: roce, bandwidth: 400Gb/s, latency: 3us}
)");
  Expected<Catalog> c = Catalog::WithUserFiles({first, second});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->Link("x")->kind, LinkKind::kRoce);
  EXPECT_DOUBLE_EQ(c->Link("x")->bandwidth, 50e9);
  EXPECT_EQ(c->overridden(), (std::vector<std::string>{"links.x (" + second + ")"}));
}

TEST(UserFile, MoeMlaAndVisionKeys) {
  const std::string path = WriteTemp("moe.yaml", R"(models:
  small-v3:
    layers: 4
    hidden: 256
    heads: 8
    kv_heads: 8
    head_dim: 48
    intermediate: 512
    vocab: 5000
    experts: 16
    experts_per_token: 2
    expert_intermediate: 64
    shared_experts: 1
    shared_intermediate: 64
    first_dense_layers: 1
    router_bias: true
    native_dtype: fp8
    mla: {q_lora_rank: 32, kv_lora_rank: 64, qk_nope_head_dim: 32, qk_rope_head_dim: 16,
          v_head_dim: 32}
  small-vl:
    layers: 2
    hidden: 64
    heads: 4
    kv_heads: 4
    head_dim: 16
    intermediate: 128
    vocab: 1000
    vision: {layers: 2, hidden: 32, heads: 4, intermediate: 64, patch_size: 14, image_size: 56,
             projector_params: 2080, tokens_per_image: 16}
)");
  Expected<Catalog> c = Catalog::WithUserFiles({path});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ModelSpec v3 = *c->Model("small-v3");
  ASSERT_TRUE(v3.moe.has_value());
  ASSERT_TRUE(v3.mla.has_value());
  EXPECT_EQ(v3.moe->first_dense_layers, 1);
  EXPECT_TRUE(v3.moe->router_bias);
  EXPECT_EQ(v3.native_dtype, DType::kFp8);
  EXPECT_EQ(KvElementsPerTokenPerLayer(v3), 80);
  EXPECT_EQ(MoeLayers(v3), 3);
  const ModelSpec vl = *c->Model("small-vl");
  ASSERT_TRUE(vl.vision.has_value());
  EXPECT_EQ(vl.vision->channels, 3);
  // patch conv 3*14*14*32 + class 32 + 17 positions * 32 + pre/post norms 128
  // + 2 layers * (attention 4*(32*32+32) + norms 128 + ffn 2*32*64 + 64 + 32).
  EXPECT_EQ(CountParams(vl).vision_encoder, 18816 + 32 + 544 + 128 + 2 * (4224 + 128 + 4096 + 96));
  EXPECT_EQ(CountParams(vl).vision_projector, 2080);
}

TEST(UserFile, MissingFileIsInvalidInput) {
  Expected<Catalog> c = Catalog::WithUserFiles({"no/such/catalog.yaml"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(c.status().message(), HasSubstr("no/such/catalog.yaml"));
}

// A minimal valid model, one key per line, for the error cases below.
constexpr const char* kModelHeader = "models:\n  m:\n";
constexpr const char* kModelBody =
    "    layers: 32\n"
    "    hidden: 4096\n"
    "    heads: 32\n"
    "    kv_heads: 8\n"
    "    head_dim: 128\n"
    "    intermediate: 14336\n"
    "    vocab: 32000\n";

std::string ModelFile(const std::string& replace_from, const std::string& replace_to) {
  std::string body = kModelBody;
  if (!replace_from.empty()) body.replace(body.find(replace_from), replace_from.size(), replace_to);
  return kModelHeader + body;
}

TEST(UserFileErrors, UnknownTopLevelSection) {
  EXPECT_EQ(LoadError("model:\n  m: {}\n"),
            "FILE:1:1: unknown field 'model'; did you mean 'models'? (valid: models, gpus, "
            "links)\n"
            "    1 | model:\n"
            "      | ^\n");
}

TEST(UserFileErrors, UnknownModelKeySuggestsTheNearest) {
  EXPECT_EQ(LoadError(ModelFile("kv_heads: 8", "kv_head: 8")),
            "FILE:6:5: models.m: unknown field 'kv_head'; did you mean 'kv_heads'? (valid: "
            "description, source, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, "
            "gated_mlp, tied_embeddings, qkv_bias, qk_norm, norms_per_layer, max_context, "
            "native_dtype, sliding_window, global_every, experts, experts_per_token, "
            "expert_intermediate, shared_experts, shared_intermediate, first_dense_layers, "
            "router_bias, mla, vision, published_params, published_active_params)\n"
            "    6 |     kv_head: 8\n"
            "      |     ^\n");
}

TEST(UserFileErrors, HeadsNotAMultipleOfKvHeads) {
  EXPECT_EQ(LoadError(ModelFile("kv_heads: 8", "kv_heads: 6")),
            "FILE:6:15: models.m.kv_heads: heads (32) must be a multiple of kv_heads (6)\n"
            "    6 |     kv_heads: 6\n"
            "      |               ^\n");
}

TEST(UserFileErrors, MissingRequiredField) {
  EXPECT_EQ(LoadError(ModelFile("    vocab: 32000\n", "")),
            "FILE:3:5: models.m: missing required field 'vocab'\n"
            "    3 |     layers: 32\n"
            "      |     ^\n");
}

TEST(UserFileErrors, WrongTypeIsNotCoerced) {
  EXPECT_THAT(LoadError(ModelFile("layers: 32", "layers: 32.5")),
              HasSubstr("FILE:3:13: models.m.layers: expected an integer"));
  EXPECT_THAT(LoadError(ModelFile("layers: 32", "layers: many")),
              HasSubstr("FILE:3:13: models.m.layers: expected an integer"));
}

TEST(UserFileErrors, ZeroSize) {
  EXPECT_EQ(LoadError(ModelFile("hidden: 4096", "hidden: 0")),
            "FILE:4:13: models.m.hidden: expected an integer in [1, 16777216], got 0\n"
            "    4 |     hidden: 0\n"
            "      |             ^\n");
}

TEST(UserFileErrors, TopKAboveExpertCount) {
  EXPECT_EQ(LoadError(ModelFile("    vocab: 32000\n",
                                "    vocab: 32000\n    experts: 8\n    experts_per_token: 10\n"
                                "    expert_intermediate: 14336\n")),
            "FILE:11:24: models.m.experts_per_token: expected an integer in [1, experts = 8], "
            "got 10\n"
            "   11 |     experts_per_token: 10\n"
            "      |                        ^\n");
}

TEST(UserFileErrors, MoeKeyOnADenseModel) {
  EXPECT_THAT(
      LoadError(ModelFile("    vocab: 32000\n", "    vocab: 32000\n    experts_per_token: 2\n")),
      HasSubstr("FILE:10:24: models.m.experts_per_token: experts_per_token applies to "
                "mixture-of-experts models only; set experts >= 1 or remove it"));
}

TEST(UserFileErrors, MlaSectionIsCheckedToo) {
  EXPECT_THAT(
      LoadError(ModelFile("    vocab: 32000\n",
                          "    vocab: 32000\n    mla: {kv_lora_rank: 0, qk_nope_head_dim: 128,"
                          " qk_rope_head_dim: 64, v_head_dim: 128}\n")),
      HasSubstr("models.m.mla.kv_lora_rank: expected an integer in [1, 16777216], got 0"));
  EXPECT_THAT(
      LoadError(ModelFile("    vocab: 32000\n", "    vocab: 32000\n    mla: {kv_lora_rnak: 1}\n")),
      HasSubstr("unknown field 'kv_lora_rnak'; did you mean 'kv_lora_rank'?"));
}

TEST(UserFileErrors, UnknownNativeDtype) {
  EXPECT_THAT(
      LoadError(ModelFile("    vocab: 32000\n", "    vocab: 32000\n    native_dtype: bf61\n")),
      HasSubstr("FILE:10:19: models.m.native_dtype: unknown dtype 'bf61'; did you mean "
                "'bf16'?"));
}

constexpr const char* kGpuHeader =
    "gpus:\n"
    "  g:\n"
    "    memory: 96GiB\n"
    "    bf16_tflops: 900\n"
    "    default_intra_link: nvlink4\n";

TEST(UserFileErrors, BandwidthWithoutUnit) {
  EXPECT_EQ(LoadError(std::string(kGpuHeader) + "    memory_bandwidth: 4000\n"),
            "FILE:6:23: gpus.g.memory_bandwidth: expected a bandwidth with a unit per second (B/s, "
            "KB/s, MB/s, GB/s, TB/s, KiB/s .. TiB/s, or bits: Kb/s .. Tb/s), e.g. '450GB/s' or "
            "'400Gb/s', got '4000'\n"
            "    6 |     memory_bandwidth: 4000\n"
            "      |                       ^\n");
}

TEST(UserFileErrors, FlopsInsteadOfTflops) {
  EXPECT_THAT(LoadError("gpus:\n  g:\n    memory: 96GiB\n    memory_bandwidth: 4TB/s\n"
                        "    bf16_tflops: 9e14\n    default_intra_link: nvlink4\n"),
              HasSubstr("FILE:5:18: gpus.g.bf16_tflops: expected a number in (0, 1000000] "
                        "(TFLOPS, e.g. 989.5 for an H100 SXM), got 9e14"));
}

TEST(UserFileErrors, UnknownDefaultLink) {
  EXPECT_THAT(LoadError("gpus:\n  g:\n    memory: 96GiB\n    memory_bandwidth: 4TB/s\n"
                        "    bf16_tflops: 900\n    default_intra_link: nvlnk4\n"),
              HasSubstr("FILE:6:25: gpus.g.default_intra_link: unknown link 'nvlnk4'; did you "
                        "mean 'nvlink4'?"));
}

TEST(UserFileErrors, UnknownGpuDtypeIsLocatedAtTheItem) {
  EXPECT_THAT(
      LoadError(std::string(kGpuHeader) + "    memory_bandwidth: 4TB/s\n    dtypes: [bf16, fp9]\n"),
      HasSubstr("FILE:7:20: gpus.g.dtypes[1]: unknown dtype 'fp9'; did you mean"));
}

TEST(UserFileErrors, NegativeMemory) {
  EXPECT_THAT(LoadError("gpus:\n  g:\n    memory: -1GiB\n    memory_bandwidth: 4TB/s\n"
                        "    bf16_tflops: 900\n    default_intra_link: nvlink4\n"),
              HasSubstr("FILE:3:13: gpus.g.memory:"));
}

TEST(UserFileErrors, UnknownLinkKind) {
  EXPECT_THAT(LoadError("links:\n  l: {kind: infiniband2, bandwidth: 50GB/s, latency: 2us}\n"),
              HasSubstr("FILE:2:13: links.l.kind: unknown link kind 'infiniband2'; did you mean "
                        "'infiniband'?"));
}

TEST(UserFileErrors, LatencyNeedsAUnit) {
  EXPECT_THAT(LoadError("links:\n  l: {kind: roce, bandwidth: 50GB/s, latency: 2}\n"),
              HasSubstr("links.l.latency: expected a duration with a unit"));
}

TEST(UserFileErrors, EntryNameWithWhitespace) {
  EXPECT_THAT(LoadError("links:\n  my link: {kind: roce, bandwidth: 50GB/s, latency: 2us}\n"),
              HasSubstr("links.my link: invalid entry name 'my link': names are non-empty and "
                        "contain no whitespace"));
}

// Regression: a model name with an escape sequence was printed raw.
TEST(UserFileErrors, EntryNameWithAControlCharacter) {
  EXPECT_THAT(LoadError("models:\n  \"evil\\e[2J\": {params: 8B}\n"),
              HasSubstr("invalid entry name: contains the control character U+001B at byte 4: names are printed, "
                        "so control and bidirectional-formatting characters are refused"));
}

TEST(UserFileErrors, SectionMustBeAMap) {
  EXPECT_THAT(LoadError("models: [a, b]\n"), HasSubstr("FILE:1:9: models: expected a mapping"));
}

TEST(ParseModelSpec, ReadsAScenarioInlineSpec) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(
      "model:\n"
      "  spec: {layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128,\n"
      "         intermediate: 28672, vocab: 128256, experts: 0, experts_per_token: 0}\n",
      "scenario.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  Expected<ModelSpec> m = Catalog::ParseModelSpec(doc->root()["model"]["spec"], "inline");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "inline");
  EXPECT_FALSE(m->moe.has_value());
  EXPECT_EQ(m->source, "user catalog scenario.yaml:2");
  EXPECT_EQ(CountParams(*m).total(), CountParams(*Catalog::Builtin().Model("atlas-70b")).total());
}

TEST(ParseModelSpec, ErrorsCarryTheScenarioPath) {
  Expected<YamlDocument> doc = YamlDocument::LoadString(
      "model:\n  spec: {layers: 80, hidden: 8192, heads: 64, kv_heads: 7, head_dim: 128,\n"
      "         intermediate: 28672, vocab: 128256}\n",
      "scenario.yaml");
  ASSERT_TRUE(doc.ok());
  Expected<ModelSpec> m = Catalog::ParseModelSpec(doc->root()["model"]["spec"], "inline");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "scenario.yaml:2:57: model.spec.kv_heads: heads (64) must be a multiple of kv_heads "
            "(7)\n"
            "    2 |   spec: {layers: 80, hidden: 8192, heads: 64, kv_heads: 7, head_dim: 128,\n"
            "      |                                                         ^\n");
}

}  // namespace
}  // namespace fleetplan
