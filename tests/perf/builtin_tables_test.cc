// The kernel tables that ship inside the binary (data/kernels, perf/gzip_file.h): folders
// and files by `builtin:` path, the bytes the same as the public data they came from, and
// a missing one named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perf/gzip_file.h"
#include "support/shared_data.h"

namespace fleetplan {
namespace {

using perf_internal::IsTableFile;
using perf_internal::IsTableFolder;
using perf_internal::ReadMaybeGzip;
using perf_internal::TableFilesBelow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kTables[] = {
    "attention/vllm/0.24.0/context_attention_perf.csv.gz", "attention/vllm/0.24.0/generation_attention_perf.csv.gz",
    "comm/nccl/2.29.2/nccl_perf.csv.gz",                   "comm/vllm/0.24.0/custom_allreduce_perf.csv.gz",
    "gemm/vllm/0.24.0/gemm_perf.csv.gz",                   "moe/vllm/0.24.0/moe_perf.csv.gz",
};

TEST(BuiltinTables, H100AndH200FoldersHoldEveryTable) {
  for (const std::string gpu : {"h100_sxm", "h200_sxm"}) {
    const std::string dir = "builtin:aiconfigurator/" + gpu;
    EXPECT_TRUE(IsTableFolder(dir)) << dir;
    EXPECT_TRUE(IsTableFolder(dir + "/")) << dir;
    for (const char* t : kTables) EXPECT_TRUE(IsTableFile(dir + "/" + t)) << dir << "/" << t;
  }
  EXPECT_FALSE(IsTableFolder("builtin:aiconfigurator/a100_sxm"));
  EXPECT_FALSE(IsTableFile("builtin:aiconfigurator/h100_sxm"));  // a folder, not a file
  EXPECT_FALSE(IsTableFolder("builtin:aiconfigurator/h100"));    // a prefix of a name is no folder
}

TEST(BuiltinTables, AFolderListsItsFilesSorted) {
  const auto files = TableFilesBelow("builtin:aiconfigurator/h100_sxm/comm");
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_THAT(*files, ElementsAre("builtin:aiconfigurator/h100_sxm/comm/nccl/2.29.2/nccl_perf.csv.gz",
                                  "builtin:aiconfigurator/h100_sxm/comm/vllm/0.24.0/custom_allreduce_perf.csv.gz"));
}

TEST(BuiltinTables, ATableReadsAsCsvText) {
  const auto text = ReadMaybeGzip("builtin:aiconfigurator/h100_sxm/comm/vllm/0.24.0/custom_allreduce_perf.csv.gz");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_THAT(text->substr(0, text->find('\n')), HasSubstr("latency"));
}

TEST(BuiltinTables, AMissingTableIsNamed) {
  const auto text = ReadMaybeGzip("builtin:aiconfigurator/h100_sxm/gemm/vllm/9.9.9/gemm_perf.csv.gz");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "builtin:aiconfigurator/h100_sxm/gemm/vllm/9.9.9/gemm_perf.csv.gz: no such built-in table");
}

// The shipped bytes are the public data's (which the project's own copy was made from).
TEST(BuiltinTables, EveryTableDecompressesToThePublicDatasBytes) {
  FP_REQUIRE_SHARED_DATA();
  for (const std::string gpu : {"h100_sxm", "h200_sxm"}) {
    for (const char* t : kTables) {
      const auto shipped = ReadMaybeGzip("builtin:aiconfigurator/" + gpu + "/" + t);
      const auto shared = ReadMaybeGzip(testing::SharedPath("profiles/aiconfigurator/" + gpu + "/" + t));
      ASSERT_TRUE(shipped.ok()) << shipped.status().message();
      ASSERT_TRUE(shared.ok()) << shared.status().message();
      EXPECT_TRUE(*shipped == *shared) << gpu << "/" << t;
    }
  }
}

}  // namespace
}  // namespace fleetplan
