#include "workload/yaml_util.h"

#include <filesystem>

namespace fleetplan::workload_internal {

Json YamlToJson(const YamlNode& node) {
  if (!node.present() || node.IsNull()) return nullptr;
  if (node.IsMap()) {
    Json out = Json::object();
    auto entries = node.Entries();
    if (entries.ok()) {
      for (const auto& [key, value] : *entries) out[key] = YamlToJson(value);
    }
    return out;
  }
  if (node.IsSequence()) {
    Json out = Json::array();
    auto items = node.Items();
    if (items.ok()) {
      for (const YamlNode& item : *items) out.push_back(YamlToJson(item));
    }
    return out;
  }
  if (auto i = node.AsInt(); i.ok()) return *i;
  if (auto d = node.AsDouble(); d.ok()) return *d;
  if (auto b = node.AsBool(); b.ok()) return *b;
  if (auto s = node.AsString(); s.ok()) return *s;
  return node.Text();
}

std::string ResolveAgainstYamlFile(const YamlNode& node, const std::string& relative) {
  const std::filesystem::path rel(relative);
  if (rel.is_absolute()) return relative;
  const std::string file = node.location().file;
  if (file.empty()) return relative;
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (dir.empty()) return relative;
  return (dir / rel).lexically_normal().string();
}

}  // namespace fleetplan::workload_internal
