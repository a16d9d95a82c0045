// Fuzzes what `fleetplan validate RESULT.json --setup SETUP.yaml` reads: the first input
// byte picks the reader. Even: the input is a vllm bench serve result file
// (ParseVllmBenchResult); odd: a validate setup (ParseBenchSetup), and a setup that reads
// is bound and replays one small request (ValidateBenchResults: the scenario it builds
// loads, binds and runs, or fails located). Any failure must be a located invalid-input
// error; a replay that succeeds has a finite mean error for TTFT, TPOT and E2E.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/fleet/bench_validation.h"
#include "fleetplan/metrics/vllm_bench.h"
#include "fuzz_check.h"

namespace {

constexpr const char* kTarget = "bench_validate_fuzz";

// One request of 64 prompt and 4 output tokens, all at once.
fleetplan::VllmBenchResult OneRequest() {
  fleetplan::VllmBenchResult r;
  r.path = "r.json";
  fleetplan::VllmBenchRequest q;
  q.input_tokens = 64;
  q.output_tokens = 4;
  q.ttft = fleetplan::Ms(20);
  q.e2e = fleetplan::Ms(50);
  r.requests.push_back(q);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    auto r = fleetplan::ParseVllmBenchResult(text, "r.json");
    fleetplan::fuzz::CheckFailure(r, kTarget);
    if (r.ok()) {
      fleetplan::fuzz::Require(r->detailed() || (r->completed && *r->completed >= 1), kTarget,
                               "an aggregate-only result without completed requests read", text);
    }
    return 0;
  }
  auto setup = fleetplan::ParseBenchSetup(text, "setup.yaml");
  fleetplan::fuzz::CheckFailure(setup, kTarget);
  if (!setup.ok()) return 0;
  auto v = fleetplan::ValidateBenchResults(*setup, {OneRequest()});
  // A layout that leaves no memory for KV is a failed check, not invalid input.
  if (!v.ok() && v.status().code() == fleetplan::StatusCode::kCheckFailed) return 0;
  fleetplan::fuzz::CheckFailure(v, kTarget);
  if (!v.ok()) return 0;
  for (const char* m : {"ttft", "tpot", "e2e"}) {
    const auto& e = v->json["points"][0]["metrics"][m]["mean_error_pct"];
    fleetplan::fuzz::Require(e.is_number() && std::isfinite(e.get<double>()), kTarget, "no finite mean error", m);
  }
  return 0;
}
