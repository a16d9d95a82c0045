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
// Thread model: single-threaded; deterministic (handlers are looked up for dispatch,
// never compared for order).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

// 32 bytes, as the heap moves events on every push and pop: the handler is an index
// into the queue's handler table, the code one byte.
struct Event {
  SimTime time;
  uint64_t seq = 0;
  int64_t request = -1;  // payload, as the handler defines it
  int32_t replica = -1;
  uint16_t handler = 0;  // EventQueue::handler(id)
  uint8_t code = 0;      // the handler's own event kind
  bool passive = false;
};
static_assert(sizeof(Event) == 32, "the heap moves events on every push and pop");

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void OnEvent(const Event& e) = 0;

 private:
  friend class EventQueue;
  uint16_t event_handler_id_ = 0;
};

class EventQueue {
 public:
  // Makes `handler` a target of events. REQUIRES: it outlives the queue's use of it;
  // fewer than 2^16 handlers.
  void Register(EventHandler* handler) {
    handler->event_handler_id_ = static_cast<uint16_t>(handlers_.size());
    handlers_.push_back(handler);
  }
  EventHandler* handler(uint16_t id) const { return handlers_[id]; }

  // REQUIRES: handler registered; code < 256.
  void Push(SimTime time, EventHandler* handler, int32_t code, int32_t replica = -1, int64_t request = -1,
            bool passive = false) {
    heap_.push(Event{time, next_seq_++, request, replica, handler->event_handler_id_, static_cast<uint8_t>(code),
                     passive});
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
  std::vector<EventHandler*> handlers_;
  uint64_t next_seq_ = 0;
  size_t passive_ = 0;
};

}  // namespace fleetplan
