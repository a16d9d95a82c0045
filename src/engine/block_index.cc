#include "fleetplan/engine/block_index.h"

#include <utility>

namespace fleetplan {

void BlockIndex::Resize(size_t capacity) {
  FP_ASSERT(capacity >= kMinSlots && (capacity & (capacity - 1)) == 0 && capacity > 4 * size_);
  std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(capacity));
  mask_ = capacity - 1;
  for (const Slot& s : old) {
    if (s.block < 0) continue;
    size_t i = Home(s.key);
    while (slots_[i].block >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

}  // namespace fleetplan
