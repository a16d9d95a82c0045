// `fleetplan validate`: replaying a measured run directory, end to end in process.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "cli/verbs.h"
#include "fleetplan/core/json.h"

#include "support/shared_data.h"

namespace fleetplan::cli {
namespace {

using ::testing::HasSubstr;

using VerbRun = testing::CliRun;

VerbRun Validate(std::vector<std::string> args) {
  args.insert(args.begin(), "validate");
  return testing::RunFleetplan(std::move(args));
}

std::string Run4090() { return testing::SharedPath("profiles/llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B"); }
std::string Profile4090() {
  return testing::SharedPath("profiles/llmservingsim/perf/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1");
}

// A small run directory a user might record: three requests, one clock.
class UserRunDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("validate_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
    Write("meta.json",
          R"({"model": "meta-llama/Llama-3.1-8B", "num_requests": 3,
              "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 8, "max_num_batched_tokens": 512},
              "kv_cache": {"block_size": 16, "num_gpu_blocks": 1000}})");
    Write("requests.jsonl",
          R"({"request_id": "a", "input_toks": 100, "output_toks": 10, "arrival_time": 10.0, "queued_ts": 10.0, "scheduled_ts": 10.0, "first_token_ts": 10.05, "last_token_ts": 10.3})" "\n"
          R"({"request_id": "b", "input_toks": 600, "output_toks": 5, "arrival_time": 10.1, "queued_ts": 10.1, "scheduled_ts": 10.1, "first_token_ts": 10.2, "last_token_ts": 10.4})" "\n"
          R"({"request_id": "c", "input_toks": 50, "output_toks": 1, "arrival_time": 10.2, "queued_ts": 10.2, "scheduled_ts": 10.2, "first_token_ts": 10.25, "last_token_ts": 10.25})" "\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string Dir() const { return dir_.string(); }
  std::filesystem::path dir_;
};

TEST_F(UserRunDir, ReplaysAUserRecordedRun) {
  FP_REQUIRE_SHARED_DATA();
  const VerbRun r = Validate({Dir(), "--profile", Profile4090(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["run"]["requests"], 3);
  EXPECT_DOUBLE_EQ(j["metrics"]["ttft"]["measured_ms"]["p50"].get<double>(), 50.0);
  EXPECT_EQ(j["metrics"]["tpot"]["requests"], 2);  // the 1-token answer has no TPOT
  EXPECT_GT(j["metrics"]["e2e"]["predicted_ms"]["mean"].get<double>(), 0.0);
  EXPECT_THAT(j["notes"].dump(), HasSubstr("timeseries.csv absent"));
}

// S22: an empty timeseries.csv (or a header alone) says so, as a missing one does.
TEST_F(UserRunDir, AnEmptyTimeSeriesIsNoted) {
  FP_REQUIRE_SHARED_DATA();
  for (const std::string text : {"", "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n"}) {
    Write("timeseries.csv", text);
    const VerbRun r = Validate({Dir(), "--profile", Profile4090(), "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(Json::parse(r.out)["notes"].dump(), HasSubstr("timeseries.csv has no rows")) << text;
  }
}

TEST_F(UserRunDir, MissingMetaIsLocated) {
  std::filesystem::remove(dir_ / "meta.json");
  const VerbRun r = Validate({Dir()});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("meta.json: missing file: a run directory needs meta.json"));
}

TEST_F(UserRunDir, MissingRequestsIsLocated) {
  std::filesystem::remove(dir_ / "requests.jsonl");
  const VerbRun r = Validate({Dir()});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("requests.jsonl: missing file: a run directory needs requests.jsonl"));
}

TEST_F(UserRunDir, MissingProfileIsAnError) {
  const VerbRun r = Validate({Dir(), "--profile", Dir() + "/no-such-profile"});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("no-such-profile"));
  // B8: a run outside the shared data's layout, without --profile, is told to name one.
  const VerbRun derived = Validate({Dir()});
  EXPECT_EQ(derived.code, 3);
  EXPECT_THAT(derived.err, HasSubstr(": no kernel profile was given, and the one the shared data's layout implies ("));
  EXPECT_THAT(derived.err, HasSubstr("name the run's profile with --profile DIR"));
}

TEST_F(UserRunDir, MissingFieldIsLocated) {
  Write("meta.json", R"({"model": "meta-llama/Llama-3.1-8B", "engine_kwargs": {"max_num_batched_tokens": 512}})");
  const VerbRun r = Validate({Dir()});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("meta.json: engine_kwargs.max_num_seqs: missing required field"));
}

TEST_F(UserRunDir, CountDisagreeingWithMetaIsAnError) {
  Write("meta.json",
        R"({"model": "meta-llama/Llama-3.1-8B", "num_requests": 300,
            "engine_kwargs": {"max_num_seqs": 8, "max_num_batched_tokens": 512}})");
  const VerbRun r = Validate({Dir()});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("requests.jsonl: 3 records, but meta.json num_requests says 300"));
}

TEST_F(UserRunDir, BadRequestRowIsLocated) {
  Write("requests.jsonl",
        R"({"request_id": "a", "input_toks": 100, "output_toks": 10, "arrival_time": 10.0, "queued_ts": 10.0, "scheduled_ts": 9.0, "first_token_ts": 10.05, "last_token_ts": 10.3})" "\n");
  const VerbRun r = Validate({Dir()});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("requests.jsonl:1:"));
  EXPECT_THAT(r.err, HasSubstr("scheduled_ts 9 is before queued_ts 10"));
}

TEST_F(UserRunDir, UnknownModelHasDidYouMean) {
  Write("meta.json", R"({"model": "meta-llama/Lama-3.1-8B", "engine_kwargs": {"max_num_seqs": 8, "max_num_batched_tokens": 512}})");
  const VerbRun r = Validate({Dir()});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("meta.json: model: unknown model 'lama-3.1-8b'; did you mean 'llama-3.1-8b'?"));
}

TEST_F(UserRunDir, FitWritesACalibrationNamingItsRuns) {
  FP_REQUIRE_SHARED_DATA();
  // The default profile path does not exist beside a temp folder: link one in.
  const std::filesystem::path root = dir_.parent_path() / ("fit_root_" + dir_.filename().string());
  const std::filesystem::path run = root / "vllm-runs" / "RTX4090" / "Mine";
  const std::filesystem::path profile = root / "perf" / "RTX4090" / "meta-llama" / "Llama-3.1-8B" / "bf16";
  std::filesystem::create_directories(run.parent_path());
  std::filesystem::create_directories(profile);
  std::filesystem::create_directory_symlink(Profile4090(), profile / "tp1");
  std::filesystem::copy(dir_, run);
  const std::string out = (root / "cal.json").string();
  const VerbRun r = Validate({"--fit", out, run.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json cal = Json::parse(std::ifstream(out));
  EXPECT_EQ(cal["schema"], "fleetplan-calibration-v2");
  EXPECT_EQ(cal["fitted_on"], Json::array({"RTX4090/Mine"}));
  EXPECT_THAT(cal["method"].get<std::string>(), HasSubstr("least squares on per-request TPOT"));
  for (const char* term : {"host_overhead_us", "host_per_sequence_us", "host_per_prefill_token_ns", "gpu_time_scale"}) {
    EXPECT_TRUE(cal[term].is_number()) << term;
  }
  const VerbRun used = Validate({run.string(), "--calibration", out, "--json"});
  ASSERT_EQ(used.code, 0) << used.err;
  EXPECT_EQ(Json::parse(used.out)["calibration"]["fitted_on"], cal["fitted_on"]);
  std::filesystem::remove_all(root);
}

TEST(ValidateShared, Rtx4090ReportsEveryMetric) {
  FP_REQUIRE_SHARED_DATA();
  const VerbRun r = Validate({Run4090(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["run"]["requests"], 300);
  EXPECT_EQ(j["run"]["max_num_seqs"], 256);
  for (const char* m : {"ttft", "tpot", "e2e"}) {
    for (const char* k : {"mean", "p50", "p90", "p99"}) {
      EXPECT_GT(j["metrics"][m]["measured_ms"][k].get<double>(), 0.0) << m << " " << k;
      EXPECT_GT(j["metrics"][m]["predicted_ms"][k].get<double>(), 0.0) << m << " " << k;
    }
    EXPECT_TRUE(j["metrics"][m]["mean_error_pct"].is_number());
    EXPECT_GE(j["metrics"][m]["mape_pct"].get<double>(), 0.0);
  }
  EXPECT_FALSE(j["timeseries"].empty());
  EXPECT_THAT(j["notes"].dump(), HasSubstr("arrival = queued_ts"));
  // The tables alone, no calibration: the figures docs/FIDELITY.md records (a regression
  // guard; update both together).
  EXPECT_NEAR(j["metrics"]["tpot"]["mean_error_pct"].get<double>(), 4.0, 0.5);
  EXPECT_NEAR(j["metrics"]["e2e"]["mean_error_pct"].get<double>(), 5.0, 0.5);
  EXPECT_NEAR(j["metrics"]["ttft"]["mean_error_pct"].get<double>(), 5.4, 0.5);
  // Deterministic: the same run gives the same bytes.
  EXPECT_EQ(Validate({Run4090(), "--json"}).out, r.out);
}

TEST(ValidateShared, CalibrationFileIsUsedAndNamed) {
  FP_REQUIRE_SHARED_DATA();
  const std::string path = ::testing::TempDir() + "calibration.json";
  std::ofstream(path) << R"({"schema": "fleetplan-calibration-v1", "host_overhead_us": 500, "gpu_time_scale": 1.0,
                             "fitted_on": ["RTXPRO6000/Llama-3.1-8B"], "method": "test"})";
  const VerbRun r = Validate({Run4090(), "--calibration", path, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["calibration"]["source"], path);
  EXPECT_EQ(j["calibration"]["host_overhead_us"], 500.0);
  EXPECT_EQ(j["calibration"]["fitted_on"][0], "RTXPRO6000/Llama-3.1-8B");
  std::ofstream(path) << R"({"schema": "fleetplan-calibration-v1", "host_overhead": 500})";
  const VerbRun bad = Validate({Run4090(), "--calibration", path});
  EXPECT_EQ(bad.code, 3);
  EXPECT_THAT(bad.err, HasSubstr("host_overhead: unknown key 'host_overhead'"));
}

}  // namespace
}  // namespace fleetplan::cli

namespace fleetplan::cli {
namespace {

// A copy of the RTX 4090 profile whose meta.json names `model` and `gpu`.
std::string ProfileOf(const std::string& name, const std::string& model, const std::string& gpu) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / ("profile_" + name);
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path source = fs::path(testing::SharedPath("profiles/llmservingsim/perf/RTX4090/meta-llama/Llama-3.1-8B/bf16"));
  fs::copy(source / "tp1", root / "tp1", fs::copy_options::recursive);
  Json meta = Json::parse(*ReadFile((source / "meta.json").string()));
  meta["model"] = model;
  meta["gpu"] = gpu;
  std::ofstream(root / "meta.json") << meta.dump(2);
  return (root / "tp1").string();
}

TEST(ValidateShared, AProfileOfAnotherModelOrGpuIsRefusedUnlessAllowed) {
  if (!testing::HaveSharedData()) GTEST_SKIP() << "shared data not present";
  const std::string other_model = ProfileOf("model", "meta-llama/Llama-3.1-70B", "NVIDIA GeForce RTX 4090");
  const VerbRun refused = Validate({Run4090(), "--profile", other_model});
  EXPECT_EQ(refused.code, 3) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("meta.json"));
  EXPECT_THAT(refused.err, HasSubstr("measured on meta-llama/Llama-3.1-70B, the run served meta-llama/Llama-3.1-8B"));
  EXPECT_THAT(refused.err, HasSubstr("--allow-mismatch"));
  const VerbRun allowed = Validate({Run4090(), "--profile", other_model, "--allow-mismatch", "--json"});
  ASSERT_EQ(allowed.code, 0) << allowed.err;
  const Json report = Json::parse(allowed.out);
  bool warned = false;
  for (const Json& n : report["notes"]) warned = warned || n.get<std::string>().find("profile mismatch allowed") != std::string::npos;
  EXPECT_TRUE(warned) << report["notes"].dump();
  // Another GPU than the run's device: refused too.
  const std::string other_gpu = ProfileOf("gpu", "meta-llama/Llama-3.1-8B", "NVIDIA H100 80GB HBM3");
  const VerbRun gpu = Validate({Run4090(), "--profile", other_gpu});
  EXPECT_EQ(gpu.code, 3) << gpu.err;
  EXPECT_THAT(gpu.err, HasSubstr("measured on NVIDIA H100 80GB HBM3, the run ran on NVIDIA GeForce RTX 4090"));
}

TEST_F(UserRunDir, AProfileOfAnotherGpuThanTheRunNamesIsRefused) {
  if (!testing::HaveSharedData()) GTEST_SKIP() << "shared data not present";
  Write("meta.json",
        R"({"model": "meta-llama/Llama-3.1-8B", "hardware": {"device_name": "NVIDIA RTX PRO 6000"}, "num_requests": 3,
            "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 8, "max_num_batched_tokens": 512},
            "kv_cache": {"block_size": 16, "num_gpu_blocks": 1000}})");
  const VerbRun r = Validate({Dir(), "--profile", Profile4090()});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("measured on NVIDIA GeForce RTX 4090, the run ran on NVIDIA RTX PRO 6000"));
  // The run as first written names no device: the profile's is assumed, and said so.
  Write("meta.json",
        R"({"model": "meta-llama/Llama-3.1-8B", "num_requests": 3,
            "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 8, "max_num_batched_tokens": 512},
            "kv_cache": {"block_size": 16, "num_gpu_blocks": 1000}})");
  const VerbRun assumed = Validate({Dir(), "--profile", Profile4090(), "--json"});
  ASSERT_EQ(assumed.code, 0) << assumed.err;
  EXPECT_THAT(assumed.out, HasSubstr("the profile's (NVIDIA GeForce RTX 4090) is assumed"));
}

TEST_F(UserRunDir, TensorParallelRunPaysItsAllReducesStagedOnAGeForce) {
  FP_REQUIRE_SHARED_DATA();
  const auto meta = [](int tp) {
    return fmt::format(R"({{"model": "meta-llama/Llama-3.1-8B", "hardware": {{"device_name": "NVIDIA GeForce RTX 4090"}},
        "num_requests": 3, "engine_kwargs": {{"tensor_parallel_size": {}, "max_num_seqs": 8,
        "max_num_batched_tokens": 512}}, "kv_cache": {{"block_size": 16, "num_gpu_blocks": 1000}}}})",
                       tp);
  };
  Write("meta.json", meta(1));
  const VerbRun tp1 = Validate({Dir(), "--profile", Profile4090(), "--json"});
  ASSERT_EQ(tp1.code, 0) << tp1.err;
  // The same kernels at TP 2 (the tp1 folder named directly stands in for a tp2 one).
  Write("meta.json", meta(2));
  const VerbRun tp2 = Validate({Dir(), "--profile", Profile4090(), "--json"});
  ASSERT_EQ(tp2.code, 0) << tp2.err;
  const Json a = Json::parse(tp1.out);
  const Json b = Json::parse(tp2.out);
  EXPECT_FALSE(a["step_model"].contains("parallel_comm"));
  const Json& comm = b["step_model"]["parallel_comm"];
  EXPECT_EQ(comm["tp"], 2);
  EXPECT_EQ(comm["peer_to_peer"], false);  // rtx4090 in the catalog
  EXPECT_DOUBLE_EQ(comm["tp_link"]["bandwidth_gbps"].get<double>(), 64.0);  // no sim_cluster_config: pcie5
  EXPECT_THAT(b["notes"].dump(), HasSubstr("device NVIDIA GeForce RTX 4090 is catalog GPU rtx4090: no peer-to-peer"));
  EXPECT_THAT(b["notes"].dump(), HasSubstr("TP: 2 all-reduces of the layer's activations per layer"));
  EXPECT_GT(b["metrics"]["e2e"]["predicted_ms"]["mean"].get<double>(),
            a["metrics"]["e2e"]["predicted_ms"]["mean"].get<double>());
}

// `validate RESULT.json --setup SETUP.yaml`: vllm bench serve result files.
class BenchFiles : public UserRunDir {
 protected:
  void SetUp() override {
    UserRunDir::SetUp();
    Write("setup.yaml",
          "model: meta-llama/Llama-3.1-8B-Instruct\ngpu: h100-sxm-80g\nengine:\n  max_num_batched_tokens: 2048\n");
    Write("qps_2.json",
          R"({"request_rate": 2.0, "burstiness": 1.0, "max_concurrency": null, "completed": 3,
              "input_lens": [100, 300, 50], "output_lens": [10, 5, 1], "ttfts": [0.05, 0.1, 0.05],
              "itls": [[0.01, 0.01], [0.02], []], "errors": ["", "", ""]})");
    Write("qps_inf.json",
          R"({"request_rate": "inf", "completed": 3, "total_input_tokens": 450, "total_output_tokens": 16,
              "mean_ttft_ms": 80.0, "mean_tpot_ms": 12.0})");
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
};

TEST_F(BenchFiles, ReportsEveryPointInTheContract) {
  const std::string html = Path("validate.html");
  const VerbRun r = Validate({Path("qps_2.json"), Path("qps_inf.json"), "--setup", Path("setup.yaml"), "--json",
                              "--html", html});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  for (const Json& p : j["points"]) {
    for (const char* m : {"ttft", "tpot", "e2e"}) EXPECT_TRUE(p["metrics"][m]["mean_error_pct"].is_number()) << m;
  }
  EXPECT_EQ(j["points"][0]["request_rate"], 2.0);
  EXPECT_EQ(j["points"][1]["request_rate"], "inf");
  EXPECT_THAT(j["points"][1]["notes"].dump(), HasSubstr("lengths synthesised"));
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, HasSubstr("id=\"ttft\""));
  EXPECT_THAT(page, HasSubstr("id=\"tpot\""));
  const VerbRun text = Validate({Path("qps_2.json"), "--setup", Path("setup.yaml")});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("rate 2/s"));
  EXPECT_THAT(text.out, HasSubstr("TPOT mean ms meas/sim"));
}

TEST_F(BenchFiles, UsageAndInputErrors) {
  const VerbRun no_setup = Validate({Path("qps_2.json")});
  EXPECT_EQ(no_setup.code, 2);
  EXPECT_THAT(no_setup.err, HasSubstr("needs --setup SETUP.yaml"));
  EXPECT_EQ(Validate({Dir(), "--html", Path("x.html")}).code, 2);
  EXPECT_EQ(Validate({Dir(), "--warm-prefix-cache"}).code, 2);
  EXPECT_EQ(Validate({Path("qps_2.json"), "--setup", Path("setup.yaml"), "--fit", Path("c.json")}).code, 2);
  Write("setup.yaml", "model: llama-3.1-8b\ngpu: h100-sxm-80g\nengine:\n  max_num_batched_tokens: 0\n");
  const VerbRun bad_setup = Validate({Path("qps_2.json"), "--setup", Path("setup.yaml")});
  EXPECT_EQ(bad_setup.code, 3);
  EXPECT_THAT(bad_setup.err, HasSubstr("setup.yaml:4:27: engine.max_num_batched_tokens: expected an integer >= 1"));
  Write("setup.yaml", "model: llama-3.1-8b\ngpu: h100-sxm-80g\nengine:\n  max_num_batched_tokens: 2048\n");
  Write("qps_2.json", R"({"request_rate": 2.0, "completed": 3, "ttfts": [0.1]})");
  const VerbRun bad_file = Validate({Path("qps_2.json"), "--setup", Path("setup.yaml")});
  EXPECT_EQ(bad_file.code, 3);
  EXPECT_THAT(bad_file.err, HasSubstr("qps_2.json:1:1: missing required field 'itls'"));
}

}  // namespace
}  // namespace fleetplan::cli
