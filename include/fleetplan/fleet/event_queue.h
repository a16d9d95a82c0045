// EventQueue: the simulation's agenda, ordered by (time, sequence).
//
// Every event gets a sequence number from one increasing counter when it is pushed, so
// events at the same nanosecond run in the order they were scheduled — on every
// machine, every run (STYLE "Every priority key ends in a unique increasing id").
// Push and Pop are O(log n).
//
// An event names its handler (the fleet kernel or one of its components,
// fleet/component.h) and carries a code that only that handler interprets, so the
// kernel dispatches every event the same way and a new feature brings its own codes
// instead of a case in a central switch. A `passive` event does not keep the simulation
// alive: popped when nothing else can happen any more, it is dropped without advancing
// the clock (a cache invalidation due after the last request must not stretch the run).
// Thread model: single-threaded; deterministic (handlers are compared by identity only
// for dispatch, never for order).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

class EventHandler;

struct Event {
  SimTime time;
  uint64_t seq = 0;
  EventHandler* handler = nullptr;
  int32_t code = 0;      // the handler's own event kind
  int32_t replica = -1;  // payload, as the handler defines it
  int64_t request = -1;
  bool passive = false;
};

class EventHandler {
 public:
  virtual void OnEvent(const Event& e) = 0;

 protected:
  ~EventHandler() = default;
};

class EventQueue {
 public:
  // REQUIRES: handler outlives the event.
  void Push(SimTime time, EventHandler* handler, int32_t code, int32_t replica = -1, int64_t request = -1,
            bool passive = false) {
    heap_.push(Event{time, next_seq_++, handler, code, replica, request, passive});
    if (passive) ++passive_;
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // Events that keep the simulation alive (not passive).
  size_t active_size() const { return heap_.size() - passive_; }
  // REQUIRES: !empty().
  const Event& top() const { return heap_.top(); }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    if (e.passive) --passive_;
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
  size_t passive_ = 0;
};

}  // namespace fleetplan
