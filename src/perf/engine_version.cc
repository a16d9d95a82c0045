#include "fleetplan/perf/engine_version.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace fleetplan {

namespace {

// The first minor version of each generation after v0.
constexpr int kFirstV1Minor = 8;
constexpr int kFirstAsyncMinor = 12;
constexpr int kMaxVersionPart = 9999;

Expected<int> Part(std::string_view part, std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < 0 ||
      value > kMaxVersionPart) {
    return InvalidInput(fmt::format("expected a vLLM version MAJOR.MINOR[.PATCH] such as 0.10.2, got '{}'", text));
  }
  return value;
}

}  // namespace

std::string_view VllmGenerationName(VllmGeneration g) {
  switch (g) {
    case VllmGeneration::kV0:
      return "v0";
    case VllmGeneration::kV1:
      return "v1";
    case VllmGeneration::kV1Async:
      return "v1-async";
  }
  return "v1";
}

VllmGeneration EngineVersion::generation() const {
  if (major == 0 && minor < kFirstV1Minor) return VllmGeneration::kV0;
  if (major == 0 && minor < kFirstAsyncMinor) return VllmGeneration::kV1;
  return VllmGeneration::kV1Async;
}

Expected<EngineVersion> ParseEngineVersion(std::string_view text) {
  std::string_view rest = text;
  if (rest.starts_with('v')) rest.remove_prefix(1);
  std::vector<std::string_view> parts;
  while (true) {
    const size_t dot = rest.find('.');
    parts.push_back(rest.substr(0, dot));
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (parts.size() < 2 || parts.size() > 3) {
    return InvalidInput(fmt::format("expected a vLLM version MAJOR.MINOR[.PATCH] such as 0.10.2, got '{}'", text));
  }
  EngineVersion v;
  FP_ASSIGN_OR_RETURN(v.major, Part(parts[0], text));
  FP_ASSIGN_OR_RETURN(v.minor, Part(parts[1], text));
  v.patch = 0;
  if (parts.size() == 3) {
    FP_ASSIGN_OR_RETURN(v.patch, Part(parts[2], text));
  }
  v.text = std::string(text);
  return v;
}

HostOverhead DefaultHostOverhead(const EngineVersion& version, int64_t tp) {
  HostOverhead h;
  switch (version.generation()) {
    case VllmGeneration::kV0:
      h.per_step = kV0HostPerStep + kV0HostPerExtraRank * (tp > 1 ? tp - 1 : 0);
      break;
    case VllmGeneration::kV1:
      h.per_step = kV1HostPerStep;
      break;
    case VllmGeneration::kV1Async:
      break;
  }
  return h;
}

}  // namespace fleetplan
