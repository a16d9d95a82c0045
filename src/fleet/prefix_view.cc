#include "fleetplan/fleet/prefix_view.h"

#include <limits>

#include "fleetplan/core/status.h"

namespace fleetplan {

PrefixView::PrefixView(int64_t block_tokens, bool share_across_tenants)
    : block_tokens_(block_tokens), share_across_tenants_(share_across_tenants) {
  FP_ASSERT(block_tokens >= 1);
}

int32_t PrefixView::AddReplica(int64_t capacity_blocks) {
  FP_ASSERT(capacity_blocks >= 0 && capacity_blocks <= std::numeric_limits<int32_t>::max());
  replicas_.emplace_back().capacity = capacity_blocks;
  return static_cast<int32_t>(replicas_.size()) - 1;
}

void PrefixView::Hash(const Request& r, std::vector<BlockHash>* out) const {
  out->clear();
  const int64_t tokens = r.prompt_tokens();
  if (tokens < 1) return;
  const int64_t tenant_namespace = share_across_tenants_ ? -1 : r.tenant;
  const int64_t parts[] = {r.adapter, tenant_namespace};
  const BlockHash scope = HashScopeParts(kBlockHashRoot, parts);
  AppendBlockHashes(r.prompt, block_tokens_, scope, (tokens - 1) / block_tokens_, out);
}

int64_t PrefixView::MatchedTokens(int32_t replica, std::span<const BlockHash> hashes) const {
  const Replica& rep = replicas_[static_cast<size_t>(replica)];
  int64_t blocks = 0;
  for (const BlockHash& h : hashes) {
    if (rep.node_of.find(h) == rep.node_of.end()) break;
    ++blocks;
  }
  return blocks * block_tokens_;
}

void PrefixView::Unlink(Replica& rep, int32_t n) {
  Node& node = rep.nodes[static_cast<size_t>(n)];
  if (node.prev >= 0) rep.nodes[static_cast<size_t>(node.prev)].next = node.next;
  if (node.next >= 0) rep.nodes[static_cast<size_t>(node.next)].prev = node.prev;
  if (rep.head == n) rep.head = node.next;
  if (rep.tail == n) rep.tail = node.prev;
  node.prev = node.next = -1;
}

void PrefixView::PushFront(Replica& rep, int32_t n) {
  Node& node = rep.nodes[static_cast<size_t>(n)];
  node.prev = -1;
  node.next = rep.head;
  if (rep.head >= 0) rep.nodes[static_cast<size_t>(rep.head)].prev = n;
  rep.head = n;
  if (rep.tail < 0) rep.tail = n;
}

// Makes `h` the most recent entry, inserting it, or reusing the least recent entry's node
// when the record is full.
void PrefixView::Touch(Replica& rep, const BlockHash& h) {
  const auto found = rep.node_of.find(h);
  if (found != rep.node_of.end()) {
    Unlink(rep, found->second);
    PushFront(rep, found->second);
    return;
  }
  int32_t n = 0;
  if (static_cast<int64_t>(rep.nodes.size()) < rep.capacity) {
    n = static_cast<int32_t>(rep.nodes.size());
    rep.nodes.push_back(Node{h, -1, -1});
  } else {
    n = rep.tail;
    Unlink(rep, n);
    rep.node_of.erase(rep.nodes[static_cast<size_t>(n)].hash);
    rep.nodes[static_cast<size_t>(n)].hash = h;
  }
  rep.node_of.emplace(h, n);
  PushFront(rep, n);
}

void PrefixView::Record(int32_t replica, std::span<const BlockHash> hashes) {
  Replica& rep = replicas_[static_cast<size_t>(replica)];
  if (rep.capacity < 1) return;
  // Last block first: a prompt's leading blocks end up the most recent, so the tails of
  // chains are dropped before the shared heads (as the engine's free list does).
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) Touch(rep, *it);
}

}  // namespace fleetplan
