// PrefixPlacement: replication of hot prompt prefixes across replicas, with hysteresis
// (router.replication).
//
// A prefix is a request's first `prefix_blocks` full prompt blocks, named by the chain
// hash of the last of them (engine/block_hash.h: the hash covers every block before it
// and the cache scope). Each prefix has a placement: the replicas its requests are
// routed among (by the router's policy), so it is computed once per member and hit
// there afterwards. The first request of a prefix is routed freely and its replica
// becomes the placement.
//
// At every arrival of the prefix its rate is measured over the last `window` and compared
// with what one replica can serve of it, `replica_rate` (a capacity the user states, e.g.
// from a single-replica run of the same traffic):
//   grow    when rate / members > add_above x replica_rate: the members are predicted to
//           queue (queue relief), so a replica outside the placement with free room for
//           the prefix (telemetry: free KV blocks >= the prefix's blocks; the copy takes
//           free memory, not another prefix's blocks) joins: the one with the fewest
//           outstanding tokens. The prefix is recomputed there once.
//   shrink  when rate / (members - 1) < remove_below x replica_rate: one fewer member
//           would still not queue, so the newest member leaves and no request recomputes
//           the prefix there again.
// A shrink waits `min_hold` after any change, and a growth `min_hold` after a shrink
// (up fast, down slow; growth adds at most one member per arrival). Below add_above the copies
// a free router would spray (recomputing the prefix wherever a queue is shorter) are
// avoided; the gap down to remove_below and the hold keep a placement from oscillating
// when the rate sits near a threshold (with remove_below == add_above and no hold it
// flips with every swing of the measured rate).
// Thread model: single-threaded; deterministic (ordered map, no clocks).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/units.h"
#include "fleetplan/engine/block_hash.h"
#include "fleetplan/fleet/router.h"

namespace fleetplan {

struct ReplicationConfig {
  bool enabled = false;
  int64_t prefix_tokens = 1024;  // a prefix is this many leading prompt tokens (whole blocks)
  Duration window = Duration::Nanos(10'000'000'000);
  double replica_rate = 0;       // requests/s of one prefix one replica serves (required)
  double add_above = 0.8;        // share of replica_rate per member above which one joins
  double remove_below = 0.4;     // share per remaining member below which one leaves; <= add_above
  Duration min_hold = Duration::Nanos(10'000'000'000);
};

struct ReplicationStats {
  int64_t prefixes = 0;           // distinct prefixes seen
  int64_t replicated_prefixes = 0;  // prefixes that ever had more than one member
  int64_t added = 0;              // members added after the first
  int64_t removed = 0;
  int64_t max_members = 0;
  // {prefixes, replicated_prefixes, members_added, members_removed, max_members}
  Json ToJson() const;
};

class PrefixPlacement {
 public:
  // REQUIRES: config.enabled, prefix_blocks >= 1, replicas >= 1.
  PrefixPlacement(const ReplicationConfig& config, int64_t prefix_blocks, int64_t block_tokens, int32_t replicas);

  // The prefix of a request whose block hashes are `hashes`; nullptr when its prompt has
  // fewer than prefix_blocks full blocks (such requests are routed freely).
  const BlockHash* KeyOf(std::span<const BlockHash> hashes) const;
  // Books an arrival of `key` and returns its placement after growing or shrinking it
  // (empty: not placed yet). `view` has one entry per replica (index = replica). The
  // reference is valid until the next call.
  const std::vector<int32_t>& Arrive(const BlockHash& key, SimTime now, std::span<const ReplicaView> view);
  // The first replica of a prefix that had none.
  void Place(const BlockHash& key, int32_t replica, SimTime now);

  const ReplicationStats& stats() const { return stats_; }
  int64_t prefix_tokens() const { return prefix_blocks_ * block_tokens_; }

 private:
  struct Prefix {
    std::deque<SimTime> arrivals;  // in the window
    std::vector<int32_t> members;  // in the order they joined
    SimTime changed;
    bool last_change_was_shrink = false;
    bool replicated = false;
  };
  // Requests per second per replica if `members` replicas shared the prefix's rate.
  double PerMember(const Prefix& p, size_t members) const;
  bool MaybeGrow(Prefix& p, SimTime now, std::span<const ReplicaView> view);
  void MaybeShrink(Prefix& p, SimTime now);
  void DropIdle(SimTime now);

  ReplicationConfig config_;
  int64_t prefix_blocks_;
  int64_t block_tokens_;
  int32_t replicas_;
  std::map<BlockHash, Prefix> prefixes_;
  int64_t arrivals_since_sweep_ = 0;
  ReplicationStats stats_;
};

}  // namespace fleetplan
