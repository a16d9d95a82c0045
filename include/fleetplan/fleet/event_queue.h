// EventQueue: the simulation's agenda, ordered by (time, sequence).
//
// Every event gets a sequence number from one increasing counter when it is pushed, so
// events at the same nanosecond run in the order they were scheduled — on every
// machine, every run (STYLE "Every priority key ends in a unique increasing id").
// Push and Pop are O(log n). Payload is a small POD: what happens, to which replica,
// about which request.
// Thread model: single-threaded; deterministic.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

enum class EventKind : int32_t {
  kArrival = 0,        // the source's next request arrives (payload in the simulation)
  kStepDone = 1,       // replica `replica` finishes its step in flight
  kCancel = 2,         // the client of `request` gives up
  kTelemetry = 3,      // the router's view of replica state refreshes
  kInvalidate = 4,     // prefix-cache invalidation number `request` of the fleet setup
  kAdapterReady = 5,   // `request`'s adapter is loaded on `replica`: submit it there
  // Prefill/decode pools (`replica` carries the transfer attempt where noted):
  kTransferProgress = 6,  // the link of prefill replica `replica` may have changed
  kTransferStart = 7,     // a delayed transfer of `request` starts moving (attempt)
  kTransferTimeout = 8,   // `request`'s transfer attempt is abandoned if not done (attempt)
  kHandoffDeadline = 9,   // `request`'s deadline, while it waits in a fleet queue
};

struct Event {
  SimTime time;
  uint64_t seq = 0;
  EventKind kind = EventKind::kArrival;
  int32_t replica = -1;
  int64_t request = -1;
};

class EventQueue {
 public:
  void Push(SimTime time, EventKind kind, int32_t replica = -1, int64_t request = -1) {
    heap_.push(Event{time, next_seq_++, kind, replica, request});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // REQUIRES: !empty().
  const Event& top() const { return heap_.top(); }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  uint64_t pushed() const { return next_seq_; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace fleetplan
