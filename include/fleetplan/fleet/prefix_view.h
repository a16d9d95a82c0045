// PrefixView: the router's own, approximate record of which prompt prefixes it sent to
// which replica — what a gateway can know without asking the replicas.
//
// A prompt is cut into full blocks of `block_tokens` and each block gets a chained hash
// (engine/block_hash.h) under a router-side scope of (adapter, tenant namespace), the
// same identity the replicas' prefix caches use for content. For every replica the view
// keeps the hashes it sent there, at most that replica's capacity (its own KV pool size:
// pools of one fleet differ), dropping the least recently sent first. It does not see the replicas'
// real evictions, invalidations or preemptions, so it can be wrong both ways; with
// `router.precise: true` the simulation asks the replicas instead.
//
//   | matched: leading blocks recorded here | missing: the rest of the prompt |
//   0                     matched_tokens() ^                     prompt_tokens ^
//
// Thread model: single-threaded; deterministic (the hash map is looked up, never
// iterated; the recency order is an intrusive list).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "fleetplan/engine/block_hash.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

class PrefixView {
 public:
  // No replica yet (enough to Hash). REQUIRES: block_tokens >= 1.
  PrefixView(int64_t block_tokens, bool share_across_tenants);
  // A record for the next replica, holding at most `capacity_blocks`; returns its index
  // (0, 1, ... in call order). REQUIRES: 0 <= capacity_blocks < 2^31.
  int32_t AddReplica(int64_t capacity_blocks);
  int32_t replica_count() const { return static_cast<int32_t>(replicas_.size()); }
  int64_t capacity_blocks(int32_t replica) const { return replicas_[static_cast<size_t>(replica)].capacity; }

  // The hashes of `r`'s full prompt blocks, leaving at least one prompt token uncached
  // (as the engine does), into `out` (cleared first).
  void Hash(const Request& r, std::vector<BlockHash>* out) const;
  // Leading blocks of `hashes` recorded for `replica`, in tokens.
  int64_t MatchedTokens(int32_t replica, std::span<const BlockHash> hashes) const;
  // Records that the blocks were sent to `replica` (most recent now).
  void Record(int32_t replica, std::span<const BlockHash> hashes);
  int64_t block_tokens() const { return block_tokens_; }

 private:
  // One replica's record: a hash index into nodes, and the nodes in a doubly linked
  // recency list (head = most recently sent), so a touch and an eviction are O(1).
  struct Node {
    BlockHash hash;
    int32_t prev = -1;
    int32_t next = -1;
  };
  struct Replica {
    std::unordered_map<BlockHash, int32_t, BlockHashHasher> node_of;  // lookup only
    std::vector<Node> nodes;
    int32_t head = -1;
    int32_t tail = -1;
    int64_t capacity = 0;
  };
  static void Unlink(Replica& rep, int32_t n);
  static void PushFront(Replica& rep, int32_t n);
  void Touch(Replica& rep, const BlockHash& h);

  std::vector<Replica> replicas_;
  int64_t block_tokens_;
  bool share_across_tenants_;
};

}  // namespace fleetplan
