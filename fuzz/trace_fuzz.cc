// Fuzzes the trace importers: the first input byte picks the format (or detection), the
// rest is the file. Every request is drained (at most 10,000) and the digest finished;
// any failure must be a located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "fleetplan/workload/trace.h"
#include "fuzz_check.h"

namespace {

constexpr const char* kTarget = "trace_fuzz";

void Drain(fleetplan::TraceSource& source) {
  for (int i = 0; i < 10'000; ++i) {
    auto next = source.Next();
    fleetplan::fuzz::CheckFailure(next, kTarget);
    if (!next.ok() || !next->has_value()) break;
  }
  fleetplan::fuzz::CheckFailure(source.FinishDigest(), kTarget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  fleetplan::TraceReadOptions options;
  const size_t formats = fleetplan::TraceFormatNames().size();
  const size_t pick = data[0] % (formats + 1);
  if (pick < formats) options.format = static_cast<fleetplan::TraceFormat>(pick);
  options.drop_failed = (data[0] & 0x80) != 0;
  auto in = std::make_unique<std::istringstream>(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  auto source = fleetplan::OpenTraceStream(std::move(in), "fuzz.trace", options);
  fleetplan::fuzz::CheckFailure(source, kTarget);
  if (source.ok()) Drain(**source);
  return 0;
}
