// `fleetplan catalog`, run in-process: tables and details on stdout, JSON, user catalog
// files, and the exact text and exit codes of bad names and bad files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "cli/verbs.h"
#include "fleetplan/core/json.h"

namespace fleetplan::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using VerbResult = testing::CliRun;

VerbResult Catalog(std::vector<std::string> args) {
  args.insert(args.begin(), "catalog");
  return testing::RunFleetplan(std::move(args));
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "catalog_verb_test_" + name;
  std::ofstream(path) << text;
  return path;
}

// The table line that starts with `name` (then a space), or "" if none.
std::string RowOf(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return line;
  }
  return "";
}

TEST(CatalogVerb, ModelsTableHasOneRowPerModel) {
  const VerbResult r = Catalog({"models"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, StartsWith("name            attn  layers  hidden  heads/kv  ffn"));
  EXPECT_EQ(RowOf(r.out, "llama-3.1-8b"),
            "llama-3.1-8b    gqa       32    4096      32/8  14336                                "
            "8.03B    8.03B      8.03B        128 KiB   131072  bf16   -");
  EXPECT_EQ(RowOf(r.out, "deepseek-v3"),
            "deepseek-v3     mla       61    7168   128/128  256x2048 top-8 +1 shared, 3 dense  "
            "671.03B   37.55B    671.00B      68.63 KiB   163840  fp8    latent 512+64");
  EXPECT_THAT(RowOf(r.out, "gemma-2-27b"), HasSubstr("window 4096 on 23/46 layers"));
  EXPECT_THAT(RowOf(r.out, "llava-1.5-7b"), HasSubstr("vision 24L/1024, 576 tok/img"));
  // Header + 11 models.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 12);
}

TEST(CatalogVerb, ModelDetailPrintsTheBreakdown) {
  const VerbResult r = Catalog({"models", "llama-3.1-8b"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("llama-3.1-8b: Llama 3.1 8B, dense GQA decoder\n"
                                "  source: meta-llama/Llama-3.1-8B config.json"));
  EXPECT_THAT(r.out, HasSubstr("\n  total             8030261248\n"));
  EXPECT_THAT(r.out, HasSubstr("\n  embedding          525336576\n"));
  EXPECT_THAT(r.out, HasSubstr("\n  published_active           -\n"));
  EXPECT_THAT(r.out, HasSubstr("kv elements per token per layer 2048 (128 KiB per token in bf16)"));
}

TEST(CatalogVerb, UnknownModelIsInvalidInputWithDidYouMean) {
  const VerbResult r = Catalog({"models", "lama-3.1-8b"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "unknown model 'lama-3.1-8b'; did you mean 'llama-3.1-8b'? (valid: atlas-70b, "
            "deepseek-v3, gemma-2-27b, llama-3.1-405b, llama-3.1-70b, llama-3.1-8b, "
            "llava-1.5-7b, mistral-7b, mixtral-8x7b, qwen3-30b-a3b, qwen3-32b)\n");
}

TEST(CatalogVerb, GpusTable) {
  const VerbResult r = Catalog({"gpus"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      RowOf(r.out, "h100-sxm-80g"),
      "h100-sxm-80g    79.65 GiB   3.35 TB/s        989.5        1979       1979           -  "
      "nvlink4  measured kernels    bf16,fp16,fp32,fp8,int8,int4");
  EXPECT_THAT(RowOf(r.out, "a100-80g"), HasSubstr("  nvlink3  roofline            bf16"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 12);  // header + 11 GPUs
}

TEST(CatalogVerb, GpuDetailStatesExactBytesAndSource) {
  const VerbResult r = Catalog({"gpus", "mi300x"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  memory: 191.69 GiB (205822885888 bytes)\n"));
  EXPECT_THAT(r.out, HasSubstr("  source: AMD Instinct MI300X data sheet"));
  EXPECT_THAT(r.out, HasSubstr("  default step model: roofline (no kernel tables ship for this GPU)\n"));
  const VerbResult h200 = Catalog({"gpus", "h200-141g"});
  ASSERT_EQ(h200.code, 0) << h200.err;
  EXPECT_THAT(h200.out, HasSubstr("  default step model: aiconfigurator on the kernel tables that ship with fleetplan "
                                  "(builtin:aiconfigurator/h200_sxm)\n"));
}

TEST(CatalogVerb, LinksTable) {
  const VerbResult r = Catalog({"links"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(RowOf(r.out, "nvlink4"),
              StartsWith("nvlink4     nvlink           450 GB/s   600 ns  NVLink 4"));
  EXPECT_THAT(RowOf(r.out, "ib-ndr-400"),
              StartsWith("ib-ndr-400  infiniband        50 GB/s  2.70 us  InfiniBand NDR"));
}

TEST(CatalogVerb, UnknownGpuAndLink) {
  EXPECT_EQ(Catalog({"gpus", "h100-sxm-80"}).code, 3);
  const VerbResult r = Catalog({"links", "nvlnk4"});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith("unknown link 'nvlnk4'; did you mean 'nvlink4'?"));
}

TEST(CatalogVerb, JsonIsCanonicalAndCarriesDerivedFigures) {
  const VerbResult r = Catalog({"models", "deepseek-v3", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  const Json& m = j["models"]["deepseek-v3"];
  EXPECT_EQ(m["layers"], 61);
  EXPECT_EQ(m["mla"]["kv_lora_rank"], 512);
  EXPECT_EQ(m["derived"]["kv_elements_per_token_per_layer"], 576);
  EXPECT_EQ(m["derived"]["params"]["total"], 671'026'419'200);
  EXPECT_EQ(m["derived"]["params"]["active_per_token"], 37'552'297'472);
  EXPECT_EQ(j["overridden"], Json::array());
  // Pretty canonical form: sorted keys, 2-space indent, trailing newline; same bytes twice.
  EXPECT_EQ(r.out, *PrettyJson(j));
  EXPECT_EQ(r.out, Catalog({"models", "deepseek-v3", "--json"}).out);
}

TEST(CatalogVerb, JsonListsEveryEntryWithoutNames) {
  const VerbResult gpus = Catalog({"gpus", "--json"});
  ASSERT_EQ(gpus.code, 0) << gpus.err;
  const Json j = Json::parse(gpus.out);
  EXPECT_EQ(j["gpus"].size(), 11u);
  EXPECT_EQ(j["gpus"]["h100-sxm-80g"]["memory_bytes"], 85'520'809'984);
  const VerbResult links = Catalog({"links", "--json"});
  EXPECT_EQ(Json::parse(links.out)["links"]["nvlink4"]["latency_ns"], 600);
}

TEST(CatalogVerb, UserCatalogAddsAndOverridesAndSaysSo) {
  const std::string path = WriteTemp("user.yaml", R"(gpus:
  h100-sxm-80g: {memory: 80GiB, memory_bandwidth: 3.35TB/s, bf16_tflops: 989.5,
                 default_intra_link: nvlink4}
  lab-gpu: {memory: 32GiB, memory_bandwidth: 1TB/s, bf16_tflops: 200, default_intra_link: pcie5}
)");
  const VerbResult r = Catalog({"gpus", "--catalog", path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(RowOf(r.out, "h100-sxm-80g"),
              StartsWith("h100-sxm-80g       80 GiB   3.35 TB/s        989.5           -"));
  EXPECT_THAT(RowOf(r.out, "lab-gpu"),
              StartsWith("lab-gpu            32 GiB      1 TB/s          200           -"));
  EXPECT_THAT(r.out,
              HasSubstr("overridden by user catalog files: gpus.h100-sxm-80g (" + path + ")\n"));
  const VerbResult j = Catalog({"gpus", "lab-gpu", "--catalog", path, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(Json::parse(j.out)["overridden"][0], "gpus.h100-sxm-80g (" + path + ")");
}

TEST(CatalogVerb, RepeatedCatalogFlagsApplyInOrder) {
  const std::string a =
      WriteTemp("a.yaml", "links:\n  x: {kind: pcie, bandwidth: 10GB/s, latency: 1us}\n");
  const std::string b =
      WriteTemp("b.yaml", "links:\n  x: {kind: roce, bandwidth: 400Gb/s, latency: 3us}\n");
  const VerbResult r = Catalog({"links", "x", "--catalog", a, "--catalog", b});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  kind: roce\n"));
}

TEST(CatalogVerb, BadCatalogFileIsALocatedError) {
  const std::string path = WriteTemp("bad.yaml",
                                     "models:\n  m: {layers: 2, hidden: 64, heads: 4, "
                                     "kv_heads: 3, head_dim: 16, intermediate: 128, "
                                     "vocab: 100}\n");
  const VerbResult r = Catalog({"models", "--catalog", path});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith(path + ":2:50: models.m.kv_heads: heads (4) must be a multiple "
                                       "of kv_heads (3)\n"));
}

TEST(CatalogVerb, MissingCatalogFileIsInvalidInput) {
  const VerbResult r = Catalog({"models", "--catalog", "no/such/file.yaml"});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("no/such/file.yaml"));
}

TEST(CatalogVerb, UsageErrors) {
  EXPECT_EQ(Catalog({}).code, 2);                       // which listing?
  EXPECT_EQ(Catalog({"modles"}).code, 2);               // not a listing
  EXPECT_EQ(Catalog({"models", "--jsn"}).code, 2);      // not a flag
  EXPECT_EQ(Catalog({"models", "--catalog"}).code, 2);  // flag without its file
}

TEST(CatalogVerb, HelpExitsZero) {
  const VerbResult r = Catalog({"models", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("--catalog"));
}

}  // namespace
}  // namespace fleetplan::cli
