#include "fleetplan/fleet/adapters.h"

#include <algorithm>

#include "fleetplan/core/status.h"

namespace fleetplan {

Json AdapterStats::ToJson(Duration span, int64_t resident_now) const {
  const double secs = span.seconds();
  return Json{{"acquires", acquires},
              {"cold_loads", cold_loads},
              {"cold_load_rate", acquires > 0 ? static_cast<double>(cold_loads) / static_cast<double>(acquires) : 0.0},
              {"evictions", evictions},
              {"over_budget_loads", over_budget_loads},
              {"mean_load_wait_ms", acquires > 0 ? load_wait.millis() / static_cast<double>(acquires) : 0.0},
              {"peak_bytes", peak.count()},
              {"mean_bytes", secs > 0 ? byte_seconds / secs : 0.0},
              {"resident_now", resident_now}};
}

void AdapterResidency::Advance(SimTime now) {
  if (now > last_) {
    stats_.byte_seconds += static_cast<double>(used().count()) * (now - last_).seconds();
    last_ = now;
  }
}

void AdapterResidency::Touch(AdapterId adapter, Entry& e) {
  by_tick_.erase(e.tick);
  e.tick = tick_++;
  by_tick_.emplace(e.tick, adapter);
}

void AdapterResidency::MakeRoom() {
  auto it = by_tick_.begin();
  while (used() + config_.size > config_.memory_budget && it != by_tick_.end()) {
    const auto entry = resident_.find(it->second);
    FP_ASSERT(entry != resident_.end());
    if (entry->second.pins > 0) {
      ++it;
      continue;
    }
    resident_.erase(entry);
    it = by_tick_.erase(it);
    ++stats_.evictions;
  }
  if (used() + config_.size > config_.memory_budget) ++stats_.over_budget_loads;
}

SimTime AdapterResidency::Acquire(AdapterId adapter, SimTime now) {
  FP_ASSERT(config_.enabled && adapter != kNoAdapter);
  Advance(now);
  ++stats_.acquires;
  auto it = resident_.find(adapter);
  if (it == resident_.end()) {
    MakeRoom();
    ++stats_.cold_loads;
    const SimTime start = std::max(now, link_free_);
    link_free_ = start + config_.load_time;
    it = resident_.emplace(adapter, Entry{link_free_, tick_++, 0}).first;
    by_tick_.emplace(it->second.tick, adapter);
    stats_.peak = std::max(stats_.peak, used());
  } else {
    Touch(adapter, it->second);
  }
  ++it->second.pins;
  const SimTime ready = std::max(now, it->second.ready);
  stats_.load_wait += ready - now;
  return ready;
}

void AdapterResidency::Preload(AdapterId adapter) {
  if (resident_.count(adapter) != 0) return;
  MakeRoom();
  const auto it = resident_.emplace(adapter, Entry{SimTime(), tick_++, 0}).first;
  by_tick_.emplace(it->second.tick, adapter);
  stats_.peak = std::max(stats_.peak, used());
}

bool AdapterPartition::places(int32_t replica, AdapterId a) const {
  if (a < 0 || static_cast<size_t>(a) >= tier.size() || on.empty()) return false;
  const std::vector<AdapterId>& mine = on[static_cast<size_t>(replica) % on.size()];
  return std::binary_search(mine.begin(), mine.end(), a);
}

AdapterPartition PartitionByPopularity(const std::vector<double>& popularity, int32_t replicas, double hot,
                                       double warm) {
  FP_ASSERT(replicas >= 1 && hot >= 0 && warm >= 0 && hot + warm <= 1 + 1e-12);
  AdapterPartition p;
  p.tier.assign(popularity.size(), AdapterTier::kTail);
  p.on.assign(static_cast<size_t>(replicas), {});
  std::vector<AdapterId> order(popularity.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<AdapterId>(i);
  std::stable_sort(order.begin(), order.end(), [&](AdapterId a, AdapterId b) {
    return popularity[static_cast<size_t>(a)] > popularity[static_cast<size_t>(b)];
  });
  double total = 0;
  for (double s : popularity) total += s;
  double covered = 0;
  size_t next = 0;  // the replica the next warm or tail copy goes to
  auto place = [&](AdapterId a) {
    p.on[next].push_back(a);
    next = (next + 1) % p.on.size();
  };
  for (AdapterId a : order) {
    const double share = total > 0 ? popularity[static_cast<size_t>(a)] / total : 0;
    // Tiers by the share covered before this adapter: the first one always counts.
    const AdapterTier t = covered < hot ? AdapterTier::kHot : covered < hot + warm ? AdapterTier::kWarm : AdapterTier::kTail;
    covered += share;
    p.tier[static_cast<size_t>(a)] = t;
    if (t == AdapterTier::kHot) {
      ++p.hot;
      for (auto& on : p.on) on.push_back(a);
    } else if (t == AdapterTier::kWarm) {
      ++p.warm;
      place(a);
      if (p.on.size() > 1) place(a);
    } else {
      ++p.tail;
      place(a);
    }
  }
  for (auto& on : p.on) std::sort(on.begin(), on.end());
  return p;
}

void AdapterResidency::Release(AdapterId adapter) {
  const auto it = resident_.find(adapter);
  FP_ASSERT(it != resident_.end() && it->second.pins > 0);
  --it->second.pins;
}

}  // namespace fleetplan
