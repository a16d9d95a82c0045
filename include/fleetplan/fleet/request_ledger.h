// RequestLedger: where the fleet's components hold live requests. The kernel owns it; a
// component that keeps a request outside every engine (an admission queue, a
// prefill/decode handoff) records it here under one of its declared stages, with the
// serving replica it is bound for and, when a copy of it runs in an engine meanwhile (a
// prompt-only prefill, a KV import), that engine's replica.
//
// What the kernel reads from it, so that no component reports it through a hook of its
// own: whether the run still holds requests outside the engines (the run is not over),
// how many of them were routed and how many also live in an engine (the fleet invariant:
// every routed request is in exactly one place — an engine, a delayed start, or a ledger
// entry), whether an engine's request is a component's copy (its tokens are not the
// client's), and, per replica and stage, how many requests wait there (time series levels).
//
// Requests that share the id of a live one and wait only for their arrival to be refused
// (admission's duplicates) are counted, not keyed: `HoldDuplicate` / `ReleaseDuplicate`.
//
// Invariants: one entry per id; a stage belongs to the component that declared it and
// only that component holds, moves or releases entries of it; the per-(stage, replica)
// counts equal a recount of the entries (CheckInvariants).
// Thread model: single-threaded, owned by one Simulation; deterministic (no iteration
// reaches an output unordered).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

class FleetComponent;

class RequestLedger {
 public:
  struct Entry {
    int32_t stage = 0;
    int32_t bound_for = -1;  // the serving replica; -1: not routed yet
    int32_t copy_on = -1;    // the replica whose engine runs a copy of it; -1: none
  };

  // Declares a stage of `owner`'s (its name is unique in the run); a `level` stage's
  // per-replica count is a time series level of every replica (named `name`).
  int32_t DeclareStage(const FleetComponent* owner, std::string_view name, bool level);

  // REQUIRES: `id` has no entry (Hold) / has one of a stage of the same owner (Move,
  // Release).
  void Hold(RequestId id, int32_t stage, int32_t bound_for, int32_t copy_on = -1);
  void Move(RequestId id, int32_t stage, int32_t copy_on = -1);
  void Release(RequestId id);
  void HoldDuplicate() { ++duplicates_; }
  void ReleaseDuplicate();

  const Entry* Find(RequestId id) const;
  // True when the request `id` in `replica`'s engine is a component's copy.
  bool IsCopy(int32_t replica, RequestId id) const {
    if (copies_ == 0) return false;
    const Entry* e = Find(id);
    return e != nullptr && e->copy_on == replica;
  }
  // Entries and duplicates: the run is not over while any remain.
  int64_t held() const { return static_cast<int64_t>(entries_.size()) + duplicates_; }
  int64_t routed() const { return routed_; }  // entries bound for a replica
  int64_t copies() const { return copies_; }  // entries with a copy in an engine
  int64_t held_by(const FleetComponent* owner) const;

  // The level stages' names, in declaration order, and `replica`'s count of each
  // (`values` has one slot per name).
  std::vector<std::string_view> LevelNames() const;
  void SampleLevels(int32_t replica, std::span<int64_t> values) const;

  Status CheckInvariants() const;

 private:
  struct Stage {
    const FleetComponent* owner = nullptr;
    std::string name;
    bool level = false;
    std::vector<int64_t> per_replica;  // entries bound for each replica
  };
  void Count(const Entry& e, int sign);

  std::vector<Stage> stages_;
  std::unordered_map<RequestId, Entry> entries_;  // lookup only
  int64_t duplicates_ = 0;
  int64_t routed_ = 0;
  int64_t copies_ = 0;
};

}  // namespace fleetplan
