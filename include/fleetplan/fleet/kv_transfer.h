// KvTransferLink: the link that moves KV cache between a prefill pool and a decode pool.
//
// Each transfer first pays the link's setup latency (connection, descriptor exchange),
// then moves its bytes; transfers that are moving share the bandwidth equally (processor
// sharing: n transfers each progress at bandwidth / n). The link is work-conserving: its
// total throughput is the bandwidth whenever anything is moving.
//
// Arithmetic is exact integer: remaining work is kept in bytes × 10^9 (so one nanosecond
// at B bytes/s removes B units), in 128-bit integers, and a completion time is the
// ceiling of remaining × n / B nanoseconds. Same calls → same completion times on every
// machine.
//
// The link is passive: the caller asks NextChange() for the next time something happens,
// schedules an event then, and calls AdvanceTo() with that time.
// Thread model: single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fleetplan/core/units.h"

namespace fleetplan {

class KvTransferLink {
 public:
  // 128-bit so that bytes × 10^9 cannot overflow (GCC and Clang extension).
  __extension__ typedef __int128 Work;

  // REQUIRES: setup >= 0; bytes_per_second >= 1.
  KvTransferLink(Duration setup, int64_t bytes_per_second);

  // Starts a transfer of `bytes` at `now` and returns its id (0, 1, 2, ... in call order).
  // REQUIRES: bytes >= 0; AdvanceTo(now) was called, so nothing is pending before now.
  int64_t Start(SimTime now, Bytes bytes);
  // Drops a transfer in setup or in flight (a fault, or its request was cancelled): it
  // never completes and its share of the bandwidth goes to the others at once. Returns
  // false when the id is not active. REQUIRES: AdvanceTo(now) was called.
  bool Abort(int64_t id, SimTime now);
  // The earliest time a setup ends or a transfer completes; nullopt when idle.
  std::optional<SimTime> NextChange() const;
  // Moves time to `now` and returns the transfers that completed at or before it, in
  // completion order (ties by id). REQUIRES: now >= the time of the last call.
  std::vector<int64_t> AdvanceTo(SimTime now);

  int64_t active() const { return static_cast<int64_t>(setting_up_.size() + moving_.size()); }
  int64_t moving() const { return static_cast<int64_t>(moving_.size()); }
  int64_t completed() const { return completed_; }
  Bytes bytes_completed() const { return bytes_completed_; }
  Duration busy() const { return busy_; }  // time with at least one transfer moving

 private:
  struct Setup {
    int64_t id;
    SimTime ready;
    Bytes bytes;
  };
  struct Moving {
    int64_t id;
    Work remaining;  // bytes × 10^9
    Bytes bytes;
  };

  void CheckAdvanced(SimTime now) const;
  // Progress of every moving transfer over [now_, t], no state change in between.
  void Progress(SimTime t);
  // The completion time of the moving transfer with the least remaining work.
  std::optional<SimTime> NextCompletion() const;

  Duration setup_;
  int64_t bandwidth_;
  SimTime now_;
  int64_t next_id_ = 0;
  std::vector<Setup> setting_up_;  // in start order; ready times are non-decreasing
  std::vector<Moving> moving_;     // in the order they started moving
  int64_t completed_ = 0;
  Bytes bytes_completed_;
  Duration busy_;
};

}  // namespace fleetplan
