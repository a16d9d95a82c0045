#include "fleetplan/fleet/prefix_placement.h"

#include <algorithm>

#include "fleetplan/core/status.h"

namespace fleetplan {

namespace {
// Prefixes idle this many windows (and past their hold) are forgotten.
constexpr int64_t kIdleWindows = 4;
// How often (arrivals) idle prefixes are swept.
constexpr int64_t kSweepEvery = 4096;
}  // namespace

Json ReplicationStats::ToJson() const {
  return Json{{"prefixes", prefixes},
              {"replicated_prefixes", replicated_prefixes},
              {"members_added", added},
              {"members_removed", removed},
              {"max_members", max_members}};
}

PrefixPlacement::PrefixPlacement(const ReplicationConfig& config, int64_t prefix_blocks, int64_t block_tokens,
                                 int32_t replicas)
    : config_(config),
      prefix_blocks_(prefix_blocks),
      block_tokens_(block_tokens),
      replicas_(replicas) {
  FP_ASSERT(config.enabled && prefix_blocks >= 1 && replicas >= 1);
}

const BlockHash* PrefixPlacement::KeyOf(std::span<const BlockHash> hashes) const {
  if (static_cast<int64_t>(hashes.size()) < prefix_blocks_) return nullptr;
  return &hashes[static_cast<size_t>(prefix_blocks_ - 1)];
}

double PrefixPlacement::PerMember(const Prefix& p, size_t members) const {
  const double rate = static_cast<double>(p.arrivals.size()) / config_.window.seconds();
  return rate / static_cast<double>(members);
}

const std::vector<int32_t>& PrefixPlacement::Arrive(const BlockHash& key, SimTime now,
                                                    std::span<const ReplicaView> view) {
  FP_ASSERT(static_cast<int32_t>(view.size()) == replicas_);
  if (++arrivals_since_sweep_ >= kSweepEvery) DropIdle(now);
  auto [it, inserted] = prefixes_.try_emplace(key);
  if (inserted) ++stats_.prefixes;
  Prefix& p = it->second;
  p.arrivals.push_back(now);
  while (p.arrivals.front() < now - config_.window) p.arrivals.pop_front();
  if (p.members.empty()) return p.members;
  // Up fast, down slow: growth waits out the hold only after a shrink.
  const bool held = now - p.changed < config_.min_hold;
  if (!(held && p.last_change_was_shrink) && MaybeGrow(p, now, view)) return p.members;
  if (!held) MaybeShrink(p, now);
  return p.members;
}

bool PrefixPlacement::MaybeGrow(Prefix& p, SimTime now, std::span<const ReplicaView> view) {
  if (static_cast<int32_t>(p.members.size()) >= replicas_) return false;
  if (PerMember(p, p.members.size()) <= config_.add_above * config_.replica_rate) return false;
  int32_t best = -1;
  for (int32_t i = 0; i < replicas_; ++i) {
    if (std::find(p.members.begin(), p.members.end(), i) != p.members.end()) continue;
    const ReplicaTelemetry& t = view[static_cast<size_t>(i)].telemetry;
    if (t.kv_total_blocks - t.kv_used_blocks < prefix_blocks_) continue;  // no free room for the copy
    if (best < 0 || view[static_cast<size_t>(i)].outstanding_tokens() <
                        view[static_cast<size_t>(best)].outstanding_tokens()) {
      best = i;
    }
  }
  if (best < 0) return false;
  p.members.push_back(best);
  p.changed = now;
  p.last_change_was_shrink = false;
  ++stats_.added;
  if (!p.replicated) {
    p.replicated = true;
    ++stats_.replicated_prefixes;
  }
  stats_.max_members = std::max(stats_.max_members, static_cast<int64_t>(p.members.size()));
  return true;
}

void PrefixPlacement::MaybeShrink(Prefix& p, SimTime now) {
  if (p.members.size() < 2) return;
  if (PerMember(p, p.members.size() - 1) >= config_.remove_below * config_.replica_rate) return;
  p.members.pop_back();
  p.changed = now;
  p.last_change_was_shrink = true;
  ++stats_.removed;
}

void PrefixPlacement::Place(const BlockHash& key, int32_t replica, SimTime now) {
  Prefix& p = prefixes_.at(key);
  FP_ASSERT(p.members.empty());
  p.members.push_back(replica);
  p.changed = now;
  stats_.max_members = std::max<int64_t>(stats_.max_members, 1);
}

void PrefixPlacement::DropIdle(SimTime now) {
  arrivals_since_sweep_ = 0;
  const Duration idle = config_.window * kIdleWindows + config_.min_hold;
  std::erase_if(prefixes_, [&](const auto& entry) {
    const Prefix& p = entry.second;
    return !p.arrivals.empty() && now - p.arrivals.back() > idle;
  });
}

}  // namespace fleetplan
