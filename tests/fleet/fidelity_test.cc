// fleet/fidelity: the error by step kind on a hand-made replay, the calibration file's
// versions and located errors, and the leave-one-out fit recovering known coefficients
// from synthetic runs.
#include "fleetplan/fleet/fidelity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

StepRecord Step(int64_t start_ms, int64_t end_ms, int64_t decodes, int64_t prefill_seqs, int64_t prefill_tokens) {
  StepRecord s;
  s.start = SimTime() + Ms(start_ms);
  s.end = SimTime() + Ms(end_ms);
  s.shape.decode_seqs = decodes;
  s.shape.prefill_seqs = prefill_seqs;
  s.shape.prefill_tokens = prefill_tokens;
  return s;
}

TEST(StepKind, ClassifiesByTheChunksOfTheStep) {
  EXPECT_EQ(ClassifyStep(Step(0, 1, 0, 1, 100).shape), StepKind::kPrefill);
  EXPECT_EQ(ClassifyStep(Step(0, 1, 4, 0, 0).shape), StepKind::kDecode);
  EXPECT_EQ(ClassifyStep(Step(0, 1, 4, 1, 100).shape), StepKind::kMixed);
  EXPECT_EQ(StepKindName(StepKind::kPrefill), "prefill");
  EXPECT_EQ(StepKindName(StepKind::kDecode), "decode");
  EXPECT_EQ(StepKindName(StepKind::kMixed), "mixed");
}

// One replica: prefill-only [0, 10) ms, mixed [10, 30), decode-only [30, 35) and [35, 40).
// X arrives at 0, first token 10, finish 35 (measured TTFT 12, decode span 30);
// Y arrives at 5, first token 30, finish 40 (measured TTFT 20, decode span 8).
TEST(StepKind, AttributesEachSpanToTheKindsOfTheStepsInIt) {
  const std::vector<StepRecord> steps = {Step(0, 10, 0, 1, 100), Step(10, 30, 1, 1, 50), Step(30, 35, 2, 0, 0),
                                         Step(35, 40, 1, 0, 0)};
  const std::vector<KindRequest> requests = {
      {0, SimTime(), SimTime() + Ms(10), SimTime() + Ms(35), Ms(12), Ms(30)},
      {0, SimTime() + Ms(5), SimTime() + Ms(30), SimTime() + Ms(40), Ms(20), Ms(8)},
  };
  const KindDecomposition d = DecomposeByStepKind(steps, requests);
  EXPECT_EQ(d.steps, (std::array<int64_t, 3>{1, 2, 1}));
  EXPECT_EQ(d.step_mean_ms, (std::array<double, 3>{10, 5, 20}));
  // TTFT: X 10 ms in the prefill step; Y 5 ms of it and 20 ms in the mixed step.
  EXPECT_DOUBLE_EQ(d.ttft.measured_ms, 16.0);
  EXPECT_DOUBLE_EQ(d.ttft.total_error_pct, 9.375);  // (35 - 32) / 32
  EXPECT_DOUBLE_EQ(d.ttft.predicted_ms[0], 7.5);
  EXPECT_DOUBLE_EQ(d.ttft.predicted_ms[2], 10.0);
  EXPECT_DOUBLE_EQ(d.ttft.predicted_ms[3], 0.0);  // no idle time
  // X's -2 ms all prefill; Y's +5 ms split 5:20 -> prefill -1 ms, mixed +4 ms, over 32 ms.
  EXPECT_DOUBLE_EQ(d.ttft.contribution_pct[0], -3.125);
  EXPECT_DOUBLE_EQ(d.ttft.contribution_pct[2], 12.5);
  // measured = u * predicted per kind: 12 = 10 u_p and 20 = 5 u_p + 20 u_m, so u_p = 1.2
  // and u_m = 0.7: prefill steps predicted 1/1.2 - 1 = -16.67 %, mixed 1/0.7 - 1 = +42.86 %.
  ASSERT_TRUE(d.ttft.step_error_pct[0] && d.ttft.step_error_pct[2]);
  EXPECT_DOUBLE_EQ(*d.ttft.step_error_pct[0], -16.6667);
  EXPECT_DOUBLE_EQ(*d.ttft.step_error_pct[2], 42.8571);
  EXPECT_FALSE(d.ttft.step_error_pct[1]);  // no decode-only time in a TTFT span
  EXPECT_EQ(d.ttft.steps, (std::array<int64_t, 3>{1, 0, 1}));
  // Decode spans: X 20 ms mixed + 5 ms decode (measured 30); Y 10 ms decode (measured 8).
  EXPECT_DOUBLE_EQ(d.decode.measured_ms, 19.0);
  EXPECT_DOUBLE_EQ(d.decode.total_error_pct, -7.8947);
  EXPECT_DOUBLE_EQ(d.decode.contribution_pct[1], 2.6316);    // -1 + 2 ms over 38
  EXPECT_DOUBLE_EQ(d.decode.contribution_pct[2], -10.5263);  // -4 ms over 38
  // 8 = 10 u_d and 30 = 20 u_m + 5 u_d: u_d = 0.8, u_m = 1.3; decode steps predicted
  // +25 %, mixed -23.08 %.
  ASSERT_TRUE(d.decode.step_error_pct[1] && d.decode.step_error_pct[2]);
  EXPECT_DOUBLE_EQ(*d.decode.step_error_pct[1], 25.0);
  EXPECT_DOUBLE_EQ(*d.decode.step_error_pct[2], -23.0769);
  EXPECT_EQ(d.decode.steps, (std::array<int64_t, 3>{0, 2, 1}));
  const Json j = d.ToJson();
  EXPECT_EQ(j["steps"]["mixed"]["count"], 1);
  EXPECT_DOUBLE_EQ(j["decode"]["kinds"]["decode"]["share_pct"].get<double>(), 42.8571);  // 7.5 / 17.5
  EXPECT_TRUE(j["decode"]["kinds"]["prefill"]["step_error_pct"].is_null());
  EXPECT_FALSE(j["decode"]["kinds"].contains("idle"));
  EXPECT_TRUE(j["ttft"]["kinds"].contains("idle"));
}

class CalibrationFile : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = ::testing::TempDir() + "/calibration_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(CalibrationFile, VersionTwoCarriesTheBatchTerms) {
  const std::string path = Write(R"({"schema": "fleetplan-calibration-v2", "host_overhead_us": 150,
      "host_per_sequence_us": 12.5, "host_per_prefill_token_ns": 35, "gpu_time_scale": 0.98,
      "fitted_on": ["a/b"], "method": "test"})");
  const Expected<Calibration> c = LoadCalibration(path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->host, (HostOverhead{Us(150), Duration::Nanos(12'500), Duration::Nanos(35)}));
  EXPECT_DOUBLE_EQ(c->gpu_time_scale, 0.98);
  const Json j = CalibrationJson(*c);
  EXPECT_EQ(j["schema"], "fleetplan-calibration-v2");
  EXPECT_DOUBLE_EQ(j["host_per_sequence_us"].get<double>(), 12.5);
  EXPECT_EQ(j["host_per_prefill_token_ns"], 35);
}

TEST_F(CalibrationFile, VersionOneIsAConstantHostOverhead) {
  const std::string path =
      Write(R"({"schema": "fleetplan-calibration-v1", "host_overhead_us": 700, "gpu_time_scale": 1.02,
      "fitted_on": [], "method": "grid"})");
  const Expected<Calibration> c = LoadCalibration(path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->host, (HostOverhead{Us(700), Duration(), Duration()}));
}

TEST_F(CalibrationFile, ErrorsNameTheFileAndTheKey) {
  std::string path =
      Write(R"({"schema": "fleetplan-calibration-v1", "host_overhead_us": 0, "host_per_sequence_us": 5})");
  EXPECT_EQ(LoadCalibration(path).status().message(),
            path +
                ": host_per_sequence_us: a batch term of the host overhead needs schema 'fleetplan-calibration-v2' "
                "(the file says 'fleetplan-calibration-v1')");
  path = Write(R"({"schema": "fleetplan-calibration-v3", "host_overhead_us": 0})");
  EXPECT_EQ(LoadCalibration(path).status().message(),
            path +
                ": schema: expected 'fleetplan-calibration-v2' (or the older 'fleetplan-calibration-v1'), got "
                "\"fleetplan-calibration-v3\"");
  path = Write(R"({"schema": "fleetplan-calibration-v2", "host_overhead_us": 0, "host_per_sequence_us": -1})");
  EXPECT_EQ(LoadCalibration(path).status().message(),
            path + ": host_per_sequence_us: expected a number of microseconds in [0, 1e6]");
  path = Write(R"({"schema": "fleetplan-calibration-v2", "host_overhead_us": 0, "host_per_prefill_token_ns": "5"})");
  EXPECT_EQ(LoadCalibration(path).status().message(),
            path + ": host_per_prefill_token_ns: expected a number of nanoseconds in [0, 1e6]");
  path = Write(R"({"schema": "fleetplan-calibration-v2", "host_per_sequence_us": 1})");
  EXPECT_EQ(LoadCalibration(path).status().message(),
            path + ": host_overhead_us: missing required field (microseconds of host overhead per step)");
  path = Write(R"({"schema": "fleetplan-calibration-v2", "host_overhead_us": 0, "host_per_seq_us": 1})");
  EXPECT_THAT(LoadCalibration(path).status().message(), HasSubstr("host_per_seq_us: unknown key 'host_per_seq_us'"));
}

// Synthetic runs: the RTX PRO 6000 Llama run's first requests replayed under a known
// calibration at four max_num_seqs (128, 48, 16, 4). Fitted on three, the fourth held
// out. The held-out run is always predicted within 1 %. The coefficients themselves are
// identified only when the kernel-table time is not affine in the batch over the training
// runs: at max_num_seqs 4, 16 and 48 the decode steps' GPU time is close to a + b * S, so
// per_step, per_sequence and the scale trade off (the fit lands on another combination
// that predicts as well, e.g. 0 us, 15 us, 0.978); with the 128 run in the training set
// (long KV, mixed steps) they separate and are checked.
class SyntheticFit : public ::testing::Test {
 protected:
  static constexpr size_t kRequests = 120;
  static std::string Profile() {
    return testing::SharedPath("profiles/llmservingsim/perf/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1");
  }
  static Calibration Truth() {
    Calibration c;
    c.host = HostOverhead{Us(300), Duration::Nanos(20'000), Duration::Nanos(150)};
    c.gpu_time_scale = 0.95;
    return c;
  }
  static MeasuredRun Run(int64_t max_num_seqs) {
    Expected<MeasuredRun> real =
        LoadMeasuredRun(testing::SharedPath("profiles/llmservingsim/vllm-runs/RTXPRO6000/Llama-3.1-8B"));
    EXPECT_TRUE(real.ok()) << real.status().message();
    MeasuredRun like = *real;
    like.requests.resize(kRequests);
    like.max_num_seqs = max_num_seqs;
    like.name = "synthetic/seqs" + std::to_string(max_num_seqs);
    Expected<MeasuredRun> run = SyntheticRun(like, Profile(), Truth());
    EXPECT_TRUE(run.ok()) << run.status().message();
    return *run;
  }
};

TEST_F(SyntheticFit, LeaveOneOutRecoversTheTrueCoefficients) {
  FP_REQUIRE_SHARED_DATA();
  const std::vector<MeasuredRun> runs = {Run(128), Run(48), Run(16), Run(4)};
  for (size_t held = 0; held < runs.size(); ++held) {
    std::vector<MeasuredRun> train;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (i != held) train.push_back(runs[i]);
    }
    const Expected<Calibration> fit = FitCalibration(train, {Profile(), Profile(), Profile()});
    ASSERT_TRUE(fit.ok()) << fit.status().message();
    SCOPED_TRACE(CalibrationJson(*fit).dump());
    EXPECT_THAT(fit->method, HasSubstr("(converged in "));
    EXPECT_TRUE(CalibrationWarnings(*fit).empty());
    if (held != 0) {
      // Stated tolerance: the scale within 1 %, the per-step and per-sequence terms within
      // 10 % of their truth, the per-prompt-token term (seen only through the decodes that
      // shared a step with a prefill chunk) within 50 %.
      EXPECT_NEAR(fit->gpu_time_scale, 0.95, 0.0095);
      EXPECT_NEAR(static_cast<double>(fit->host.per_step.ns()), 300'000.0, 30'000.0);
      EXPECT_NEAR(static_cast<double>(fit->host.per_sequence.ns()), 20'000.0, 2'000.0);
      EXPECT_NEAR(static_cast<double>(fit->host.per_prefill_token.ns()), 150.0, 75.0);
    }
    // The held-out run is predicted out of sample within 1 % on TPOT and E2E.
    ValidationOptions options;
    options.profile_dir = Profile();
    options.calibration = *fit;
    options.allow_mismatch = true;
    const Expected<ValidationResult> res = ValidateRun(runs[held], options);
    ASSERT_TRUE(res.ok()) << res.status().message();
    EXPECT_LT(std::abs(res->tpot_mean_error_pct), 1.0);
    EXPECT_LT(std::abs(res->e2e_mean_error_pct), 1.0);
  }
}

// The two Llama runs are on GPUs whose tables err in opposite directions (RTX 4090 long,
// RTX PRO 6000 short): a fit on one predicts the other worse than no calibration, so the
// cross-validated fit on both is shrunk all the way back; --no-shrink keeps the
// least-squares fit, which trades a large per-step term against a low GPU scale.
TEST(FitCrossValidation, AFitThatDoesNotCarryBetweenItsRunsIsShrunkToNoCalibration) {
  FP_REQUIRE_SHARED_DATA();
  std::vector<MeasuredRun> runs;
  for (const char* dir : {"RTX4090/Llama-3.1-8B", "RTXPRO6000/Llama-3.1-8B"}) {
    Expected<MeasuredRun> run = LoadMeasuredRun(testing::SharedPath(std::string("profiles/llmservingsim/vllm-runs/") + dir));
    ASSERT_TRUE(run.ok()) << run.status().message();
    runs.push_back(*run);
  }
  const Expected<Calibration> shrunk = FitCalibration(runs, {});
  ASSERT_TRUE(shrunk.ok()) << shrunk.status().message();
  EXPECT_EQ(shrunk->host, HostOverhead{});
  EXPECT_EQ(shrunk->gpu_time_scale, 1.0);
  EXPECT_THAT(shrunk->method, HasSubstr("to share 0 of the fit"));
  EXPECT_THAT(shrunk->method, HasSubstr("RTX4090/Llama-3.1-8B held out: +4.0%"));
  const Expected<Calibration> whole = FitCalibration(runs, {}, {}, /*cross_validate=*/false);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_LT(whole->gpu_time_scale, 0.9);
  EXPECT_GT(whole->host.per_step, Duration::Nanos(1'000'000));
  EXPECT_THAT(whole->method, HasSubstr("not cross-validated (--no-shrink)"));
}

TEST(FitCrossValidation, ACalibrationFittedOnOtherHardwareOnlySaysSoInTheNotes) {
  FP_REQUIRE_SHARED_DATA();
  Expected<MeasuredRun> run = LoadMeasuredRun(testing::SharedPath("profiles/llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  const auto notes_of = [&](std::vector<std::string> fitted_on) {
    ValidationOptions options;
    options.calibration.fitted_on = std::move(fitted_on);
    const Expected<ValidationResult> res = ValidateRun(*run, options);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? res->json["notes"].dump() : std::string();
  };
  const std::string other = "the calibration was fitted on runs of other hardware only (RTXPRO6000/a, RTXPRO6000/b): "
                            "nothing in its fit tested whether it carries to RTX4090";
  EXPECT_THAT(notes_of({"RTXPRO6000/a", "RTXPRO6000/b"}), HasSubstr(other));
  EXPECT_THAT(notes_of({"RTXPRO6000/a", "RTX4090/c"}), Not(HasSubstr("other hardware")));
  EXPECT_THAT(notes_of({}), Not(HasSubstr("other hardware")));
}

}  // namespace
}  // namespace fleetplan
