#include "fleetplan/evidence/identity.h"

#include <algorithm>

#include <fmt/format.h>

#include "fleetplan/core/error.h"

namespace fleetplan {

const std::vector<std::string>& IdentityFields() {
  static const std::vector<std::string> fields = {"artifact", "runtime", "runtime_version",
                                                  "hardware", "engine_config"};
  return fields;
}

namespace {

// The fields in IdentityFields() order.
template <typename Id>
auto* IdentitySlot(Id& id, size_t i) {
  decltype(&id.artifact) slots[] = {&id.artifact, &id.runtime, &id.runtime_version, &id.hardware,
                                    &id.engine_config};
  return slots[i];
}
const std::string& IdentityValue(const EvidenceIdentity& id, size_t i) { return *IdentitySlot(id, i); }

}  // namespace

Expected<EvidenceIdentity> ReadIdentity(const YamlNode& node) {
  EvidenceIdentity id;
  if (!node.present() || node.IsNull()) return id;
  FP_RETURN_IF_ERROR(node.CheckKeys(IdentityFields()));
  for (size_t i = 0; i < IdentityFields().size(); ++i) {
    FP_ASSIGN_OR_RETURN(*IdentitySlot(id, i), node[IdentityFields()[i]].StringOr(""));
  }
  return id;
}

Expected<EvidenceIdentity> IdentityFromJson(const Json& j, std::string_view where) {
  EvidenceIdentity id;
  if (j.is_null()) return id;
  if (!j.is_object()) return InvalidInput(fmt::format("{}: identity: expected an object", where));
  const std::vector<std::string>& fields = IdentityFields();
  for (const auto& [key, value] : j.items()) {
    auto it = std::find(fields.begin(), fields.end(), key);
    if (it == fields.end()) {
      return InvalidInput(fmt::format("{}: identity: {}", where, UnknownNameMessage("field", key, fields)));
    }
    if (value.is_null()) continue;
    if (!value.is_string()) {
      return InvalidInput(fmt::format("{}: identity.{}: expected a string", where, key));
    }
    *IdentitySlot(id, static_cast<size_t>(it - fields.begin())) = value.get<std::string>();
  }
  return id;
}

std::vector<std::string> MissingIdentityFields(const EvidenceIdentity& id) {
  std::vector<std::string> missing;
  for (size_t i = 0; i < IdentityFields().size(); ++i) {
    if (IdentityValue(id, i).empty()) missing.push_back(IdentityFields()[i]);
  }
  return missing;
}

Json ToJson(const EvidenceIdentity& id) {
  Json j = Json::object();
  for (size_t i = 0; i < IdentityFields().size(); ++i) {
    const std::string& v = IdentityValue(id, i);
    j[IdentityFields()[i]] = v.empty() ? Json(nullptr) : Json(v);
  }
  return j;
}

}  // namespace fleetplan
