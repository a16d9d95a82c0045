// ComponentConfigs: the bound settings of the fleet's components, as the kernel's setup
// (simulation.h FleetSetup) carries them — one entry per registry row the run wants,
// keyed by the row's name (component.h). The kernel never reads an entry: each row's
// `make` reads its own, so a new component adds a row and an entry, not a field of the
// kernel's setup.
//
// Invariants: at most one entry per row name; an entry's type is the one its row reads
// (Find asserts it); entries are immutable once set (shared between copies of a setup).
// Thread model: a value; copies share the immutable entries.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleetplan/core/status.h"

namespace fleetplan {

class ComponentConfigs {
 public:
  // Sets (or replaces) the entry of row `row`.
  template <typename T>
  void Set(std::string_view row, T value) {
    Put(row, std::make_shared<const Entry<T>>(std::move(value)));
  }
  // The entry of row `row`, or null when the run does not want the row.
  // REQUIRES: the entry, if any, was set with type T.
  template <typename T>
  const T* Find(std::string_view row) const {
    const Base* base = Get(row);
    if (base == nullptr) return nullptr;
    const auto* entry = dynamic_cast<const Entry<T>*>(base);
    FP_ASSERT(entry != nullptr);  // a row reads the type it was given
    return &entry->value;
  }
  bool Has(std::string_view row) const { return Get(row) != nullptr; }
  void Erase(std::string_view row);
  // The rows with an entry, in the order they were first set.
  std::vector<std::string_view> rows() const;

 private:
  struct Base {
    virtual ~Base() = default;
  };
  template <typename T>
  struct Entry final : Base {
    explicit Entry(T v) : value(std::move(v)) {}
    const T value;
  };
  void Put(std::string_view row, std::shared_ptr<const Base> entry);
  const Base* Get(std::string_view row) const;

  std::vector<std::pair<std::string, std::shared_ptr<const Base>>> entries_;  // a handful: linear
};

}  // namespace fleetplan
