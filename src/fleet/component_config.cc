#include "fleetplan/fleet/component_config.h"

#include <algorithm>

namespace fleetplan {

void ComponentConfigs::Put(std::string_view row, std::shared_ptr<const Base> entry) {
  for (auto& [name, e] : entries_) {
    if (name == row) {
      e = std::move(entry);
      return;
    }
  }
  entries_.emplace_back(std::string(row), std::move(entry));
}

const ComponentConfigs::Base* ComponentConfigs::Get(std::string_view row) const {
  for (const auto& [name, e] : entries_) {
    if (name == row) return e.get();
  }
  return nullptr;
}

void ComponentConfigs::Erase(std::string_view row) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == row; }),
                 entries_.end());
}

std::vector<std::string_view> ComponentConfigs::rows() const {
  std::vector<std::string_view> out;
  out.reserve(entries_.size());
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

}  // namespace fleetplan
