#include "fleetplan/fleet/request_ledger.h"

#include <fmt/format.h>

namespace fleetplan {

int32_t RequestLedger::DeclareStage(const FleetComponent* owner, std::string_view name, bool level) {
  for (const Stage& s : stages_) FP_ASSERT(s.name != name);  // stage names are unique in the run
  Stage& s = stages_.emplace_back();
  s.owner = owner;
  s.name = std::string(name);
  s.level = level;
  return static_cast<int32_t>(stages_.size() - 1);
}

void RequestLedger::Count(const Entry& e, int sign) {
  routed_ += e.bound_for >= 0 ? sign : 0;
  copies_ += e.copy_on >= 0 ? sign : 0;
  if (e.bound_for < 0) return;
  std::vector<int64_t>& n = stages_[static_cast<size_t>(e.stage)].per_replica;
  if (n.size() <= static_cast<size_t>(e.bound_for)) n.resize(static_cast<size_t>(e.bound_for) + 1, 0);
  n[static_cast<size_t>(e.bound_for)] += sign;
}

void RequestLedger::Hold(RequestId id, int32_t stage, int32_t bound_for, int32_t copy_on) {
  FP_ASSERT(stage >= 0 && static_cast<size_t>(stage) < stages_.size());
  const Entry e{stage, bound_for, copy_on};
  const bool added = entries_.emplace(id, e).second;
  FP_ASSERT(added);  // one entry per id
  Count(e, +1);
}

void RequestLedger::Move(RequestId id, int32_t stage, int32_t copy_on) {
  const auto it = entries_.find(id);
  FP_ASSERT(it != entries_.end());
  FP_ASSERT(stages_[static_cast<size_t>(stage)].owner == stages_[static_cast<size_t>(it->second.stage)].owner);
  Count(it->second, -1);
  it->second.stage = stage;
  it->second.copy_on = copy_on;
  Count(it->second, +1);
}

void RequestLedger::Release(RequestId id) {
  const auto it = entries_.find(id);
  FP_ASSERT(it != entries_.end());
  Count(it->second, -1);
  entries_.erase(it);
}

void RequestLedger::ReleaseDuplicate() {
  FP_ASSERT(duplicates_ > 0);
  --duplicates_;
}

const RequestLedger::Entry* RequestLedger::Find(RequestId id) const {
  const auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

int64_t RequestLedger::held_by(const FleetComponent* owner) const {
  int64_t n = 0;
  for (const auto& [id, e] : entries_) n += stages_[static_cast<size_t>(e.stage)].owner == owner ? 1 : 0;
  return n;
}

std::vector<std::string_view> RequestLedger::LevelNames() const {
  std::vector<std::string_view> names;
  for (const Stage& s : stages_) {
    if (s.level) names.push_back(s.name);
  }
  return names;
}

void RequestLedger::SampleLevels(int32_t replica, std::span<int64_t> values) const {
  size_t k = 0;
  for (const Stage& s : stages_) {
    if (!s.level) continue;
    values[k++] = static_cast<size_t>(replica) < s.per_replica.size() ? s.per_replica[static_cast<size_t>(replica)] : 0;
  }
}

Status RequestLedger::CheckInvariants() const {
  std::vector<std::vector<int64_t>> recount(stages_.size());
  int64_t routed = 0;
  int64_t copies = 0;
  for (const auto& [id, e] : entries_) {
    routed += e.bound_for >= 0 ? 1 : 0;
    copies += e.copy_on >= 0 ? 1 : 0;
    if (e.bound_for < 0) continue;
    std::vector<int64_t>& n = recount[static_cast<size_t>(e.stage)];
    if (n.size() <= static_cast<size_t>(e.bound_for)) n.resize(static_cast<size_t>(e.bound_for) + 1, 0);
    ++n[static_cast<size_t>(e.bound_for)];
  }
  if (routed != routed_ || copies != copies_) {
    return InternalError(fmt::format("the request ledger counts {} routed entries and {} engine copies; its entries "
                                     "hold {} and {}",
                                     routed_, copies_, routed, copies));
  }
  for (size_t s = 0; s < stages_.size(); ++s) {
    const std::vector<int64_t>& have = stages_[s].per_replica;
    for (size_t r = 0; r < std::max(have.size(), recount[s].size()); ++r) {
      const int64_t a = r < have.size() ? have[r] : 0;
      const int64_t b = r < recount[s].size() ? recount[s][r] : 0;
      if (a != b) {
        return InternalError(fmt::format("the request ledger counts {} requests in stage {} bound for replica {}; its "
                                         "entries hold {}",
                                         a, stages_[s].name, r, b));
      }
    }
  }
  return Status::Ok();
}

}  // namespace fleetplan
