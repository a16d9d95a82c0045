// Fuzzes the records readers behind `fleetplan report`: the first input byte picks the
// format, the rest is written to a scratch file (the readers take paths) and streamed
// into a counting sink. Any failure must be a located invalid-input error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/metrics/records_io.h"
#include "fuzz_check.h"
#include "scratch.h"

namespace {

constexpr const char* kTarget = "records_fuzz";

// Accepts every class name (one handle per distinct name) and asks for ITL on all of
// them, so the readers' ITL checks run too.
class CountingSink final : public fleetplan::RecordSink {
 public:
  fleetplan::Expected<fleetplan::ClassId> ResolveClass(std::string_view name) override {
    for (size_t i = 0; i < classes_.size(); ++i) {
      if (classes_[i] == name) return static_cast<fleetplan::ClassId>(i);
    }
    classes_.emplace_back(name);
    return static_cast<fleetplan::ClassId>(classes_.size() - 1);
  }
  bool NeedsItl(fleetplan::ClassId) const override { return true; }
  void Add(const fleetplan::RequestRecord&) override { ++records; }
  int64_t records = 0;

 private:
  std::vector<std::string> classes_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto names = fleetplan::RecordFormatNames();
  const std::string format = names[data[0] % names.size()];
  const std::string path =
      fleetplan::fuzz::WriteScratch("records", std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  auto reader = fleetplan::MakeRecordReader(format);
  fleetplan::fuzz::Require(reader.ok(), kTarget, "a listed format has no reader", format);
  CountingSink sink;
  fleetplan::fuzz::CheckFailure((*reader)->Read(path, sink), kTarget);
  fleetplan::fuzz::CheckFailure(fleetplan::DetectRecordFormat(path), kTarget);
  return 0;
}
