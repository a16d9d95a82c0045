#include "fleetplan/metrics/slo.h"

#include <fmt/format.h>

#include <array>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"

namespace fleetplan {
namespace {

constexpr std::array<std::string_view, kObjectiveCount> kObjectiveNames = {
    "ttft", "tpot", "itl_max", "e2e", "e2e_by_output"};

uint32_t Bit(Objective o) { return 1U << static_cast<int>(o); }

// An optional positive duration target.
Expected<std::optional<Duration>> ReadTarget(const YamlNode& node) {
  if (!node.present()) return std::optional<Duration>();
  FP_ASSIGN_OR_RETURN(Duration d, node.AsPositiveDuration());
  return std::optional<Duration>(d);
}

Expected<OutputBucketObjective> ReadBucket(const YamlNode& item) {
  FP_RETURN_IF_ERROR(item.CheckKeys({"max_output", "e2e"}));
  OutputBucketObjective bucket;
  FP_ASSIGN_OR_RETURN(std::optional<Duration> e2e, ReadTarget(item["e2e"]));
  if (!e2e) return item["e2e"].Error("missing required field 'e2e'");
  bucket.e2e = *e2e;
  if (item["max_output"].present()) {
    FP_ASSIGN_OR_RETURN(int64_t max_output, item["max_output"].AsIntAtLeast(1));
    bucket.max_output = max_output;
  }
  return bucket;
}

Expected<std::vector<OutputBucketObjective>> ReadBuckets(const YamlNode& node) {
  std::vector<OutputBucketObjective> buckets;
  if (!node.present()) return buckets;
  FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, node.Items());
  if (items.empty()) return node.Error("expected at least one {max_output, e2e} bucket");
  for (const YamlNode& item : items) {
    if (!buckets.empty() && !buckets.back().max_output) {
      return item.Error(
          "the catch-all bucket (no max_output) must be the last one; move it to the end");
    }
    FP_ASSIGN_OR_RETURN(OutputBucketObjective bucket, ReadBucket(item));
    if (bucket.max_output && !buckets.empty() && *bucket.max_output <= *buckets.back().max_output) {
      return item["max_output"].Error(fmt::format(
          "max_output {} must be greater than the previous bucket's {} (buckets are listed in "
          "ascending order)",
          *bucket.max_output, *buckets.back().max_output));
    }
    buckets.push_back(bucket);
  }
  return buckets;
}

Expected<ClassObjectives> ReadObjectives(const YamlNode& node) {
  if (node.IsNull() || !node.IsMap()) {
    return node.Error(fmt::format(
        "expected a map of objectives ({}), got '{}'; write {{}} for a class without objectives",
        fmt::join(kObjectiveNames, ", "), node.Text()));
  }
  FP_RETURN_IF_ERROR(node.CheckKeys({"ttft", "tpot", "itl_max", "e2e", "e2e_by_output"}));
  ClassObjectives o;
  FP_ASSIGN_OR_RETURN(o.ttft, ReadTarget(node["ttft"]));
  FP_ASSIGN_OR_RETURN(o.tpot, ReadTarget(node["tpot"]));
  FP_ASSIGN_OR_RETURN(o.itl_max, ReadTarget(node["itl_max"]));
  FP_ASSIGN_OR_RETURN(o.e2e, ReadTarget(node["e2e"]));
  FP_ASSIGN_OR_RETURN(o.e2e_by_output, ReadBuckets(node["e2e_by_output"]));
  return o;
}

Status CheckAgainstWorkload(const SloSpec& slo, const std::vector<std::string>& classes) {
  for (const ClassSlo& c : slo.classes()) {
    bool known = false;
    for (const std::string& name : classes) known = known || name == c.name;
    if (!known) {
      return LocatedError(c.where, c.path,
                          UnknownNameMessage("class", c.name, classes) +
                              "; SLO classes must be declared under workload.classes");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view ObjectiveName(Objective objective) {
  return kObjectiveNames[static_cast<size_t>(objective)];
}

bool ClassObjectives::Has(Objective objective) const {
  switch (objective) {
    case Objective::kTtft: return ttft.has_value();
    case Objective::kTpot: return tpot.has_value();
    case Objective::kItlMax: return itl_max.has_value();
    case Objective::kE2e: return e2e.has_value();
    case Objective::kE2eByOutput: return !e2e_by_output.empty();
  }
  return false;
}

const OutputBucketObjective* ClassObjectives::BucketFor(int64_t output_tokens) const {
  for (const OutputBucketObjective& b : e2e_by_output) {
    if (!b.max_output || output_tokens <= *b.max_output) return &b;
  }
  return nullptr;
}

const ClassSlo* SloSpec::Find(std::string_view name) const {
  for (const ClassSlo& c : classes_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> SloSpec::names() const {
  std::vector<std::string> out;
  out.reserve(classes_.size());
  for (const ClassSlo& c : classes_) out.push_back(c.name);
  return out;
}

Expected<SloSpec> ParseSlo(const YamlNode& node) {
  if (!node.IsMap()) {
    return node.Error(fmt::format("expected a mapping of class name -> objectives, got '{}'",
                                  node.Text()));
  }
  FP_ASSIGN_OR_RETURN(auto entries, node.Entries());
  if (entries.empty()) return node.Error("expected at least one class");
  std::vector<ClassSlo> classes;
  for (const auto& [name, value] : entries) {
    if (name.empty()) {
      return value.Error("expected a non-empty class name");
    }
    ClassSlo c;
    c.name = name;
    c.path = value.path();
    c.where = value.location();
    FP_ASSIGN_OR_RETURN(c.objectives, ReadObjectives(value));
    classes.push_back(std::move(c));
  }
  return SloSpec(std::move(classes));
}

Expected<SloFile> LoadSloString(std::string_view text, const std::string& display_name) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(text, display_name));
  YamlNode root = doc.root();
  SloFile file;
  file.path = display_name;
  file.digest = DigestOf(text);
  if (!root.IsMap()) {
    return root.Error(fmt::format(
        "expected a mapping of class name -> objectives, or a scenario with a top-level "
        "'slo:' key; got '{}'",
        root.Text()));
  }
  file.is_scenario = root["slo"].present();
  FP_ASSIGN_OR_RETURN(file.slo, ParseSlo(file.is_scenario ? root["slo"] : root));
  file.declared_classes = file.slo.names();
  if (file.is_scenario) {
    YamlNode classes = root["workload"]["classes"];
    if (classes.present() && classes.IsMap()) {
      FP_ASSIGN_OR_RETURN(auto entries, classes.Entries());
      file.declared_classes.clear();
      for (const auto& [name, value] : entries) {
        if (name.empty()) return value.Error("expected a non-empty class name");
        file.declared_classes.push_back(name);
      }
      file.classes_from_workload = true;
      FP_RETURN_IF_ERROR(CheckAgainstWorkload(file.slo, file.declared_classes));
    }
  }
  return file;
}

Expected<SloFile> LoadSloFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return LoadSloString(text, path);
}

Verdict Evaluate(const RequestRecord& r, const ClassObjectives& o) {
  Verdict v;
  const OutputBucketObjective* bucket = o.BucketFor(r.output_tokens);
  if (r.status != RecordStatus::kOk) {
    for (int i = 0; i < kObjectiveCount; ++i) {
      const auto objective = static_cast<Objective>(i);
      if (objective == Objective::kE2eByOutput ? bucket != nullptr : o.Has(objective)) {
        v.missed |= Bit(objective);
      }
    }
    return v;
  }
  // An ok record has both times (CheckRecord), so the derived values exist.
  const Duration ttft = *Ttft(r);
  const Duration e2e = *E2e(r);
  const std::optional<Duration> tpot = Tpot(r);  // nullopt below two tokens: nothing to bound
  if (o.ttft && ttft > *o.ttft) v.missed |= Bit(Objective::kTtft);
  if (o.tpot && tpot && *tpot > *o.tpot) v.missed |= Bit(Objective::kTpot);
  if (o.itl_max && r.output_tokens >= 2 && !(r.itl_max && *r.itl_max <= *o.itl_max)) {
    v.missed |= Bit(Objective::kItlMax);
  }
  if (o.e2e && e2e > *o.e2e) v.missed |= Bit(Objective::kE2e);
  if (bucket && e2e > bucket->e2e) v.missed |= Bit(Objective::kE2eByOutput);
  v.qualified = r.valid && v.missed == 0;
  return v;
}

}  // namespace fleetplan
