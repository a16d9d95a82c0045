#include "fleetplan/fleet/kv_transfer.h"

#include <algorithm>

#include "fleetplan/core/status.h"

namespace fleetplan {

namespace {
constexpr KvTransferLink::Work kUnitsPerByte = 1'000'000'000;  // bytes × 10^9: one ns at B bytes/s is B units
}  // namespace

KvTransferLink::KvTransferLink(Duration setup, int64_t bytes_per_second)
    : setup_(setup), bandwidth_(bytes_per_second) {
  FP_ASSERT(setup >= Duration());
  FP_ASSERT(bytes_per_second >= 1);
}

int64_t KvTransferLink::Start(SimTime now, Bytes bytes) {
  FP_ASSERT(bytes.count() >= 0);
  CheckAdvanced(now);
  Progress(now);
  const int64_t id = next_id_++;
  setting_up_.push_back(Setup{id, now + setup_, bytes});
  return id;
}

bool KvTransferLink::Abort(int64_t id, SimTime now) {
  CheckAdvanced(now);
  Progress(now);
  const auto in_setup = std::find_if(setting_up_.begin(), setting_up_.end(), [&](const Setup& s) { return s.id == id; });
  if (in_setup != setting_up_.end()) {
    setting_up_.erase(in_setup);
    return true;
  }
  const auto in_flight = std::find_if(moving_.begin(), moving_.end(), [&](const Moving& m) { return m.id == id; });
  if (in_flight == moving_.end()) return false;
  moving_.erase(in_flight);
  return true;
}

void KvTransferLink::CheckAdvanced(SimTime now) const {
  FP_ASSERT(now >= now_);
  const std::optional<SimTime> next = NextChange();
  FP_ASSERT(!next || *next >= now);  // the caller must AdvanceTo(now) first
}

std::optional<SimTime> KvTransferLink::NextCompletion() const {
  if (moving_.empty()) return std::nullopt;
  Work least = moving_.front().remaining;
  for (const Moving& m : moving_) least = std::min(least, m.remaining);
  const Work n = static_cast<Work>(moving_.size());
  const Work ns = (least * n + bandwidth_ - 1) / bandwidth_;  // ceiling
  return now_ + Duration::Nanos(static_cast<int64_t>(ns));
}

std::optional<SimTime> KvTransferLink::NextChange() const {
  std::optional<SimTime> next = NextCompletion();
  if (!setting_up_.empty()) {
    const SimTime ready = setting_up_.front().ready;
    if (!next || ready < *next) next = ready;
  }
  return next;
}

void KvTransferLink::Progress(SimTime t) {
  FP_ASSERT(t >= now_);
  if (!moving_.empty() && t > now_) {
    const Work n = static_cast<Work>(moving_.size());
    const Work each = static_cast<Work>(bandwidth_) * (t - now_).ns() / n;
    for (Moving& m : moving_) m.remaining -= each;
    busy_ += t - now_;
  }
  now_ = t;
}

std::vector<int64_t> KvTransferLink::AdvanceTo(SimTime now) {
  FP_ASSERT(now >= now_);
  std::vector<int64_t> done;
  while (true) {
    const std::optional<SimTime> next = NextChange();
    if (!next || *next > now) break;
    Progress(*next);
    // Setups that end now start moving (ready times are non-decreasing in start order).
    while (!setting_up_.empty() && setting_up_.front().ready <= now_) {
      const Setup s = setting_up_.front();
      setting_up_.erase(setting_up_.begin());
      moving_.push_back(Moving{s.id, static_cast<Work>(s.bytes.count()) * kUnitsPerByte, s.bytes});
    }
    // Every transfer with no work left completes now, in id order.
    std::vector<int64_t> finished;
    for (const Moving& m : moving_) {
      if (m.remaining <= 0) finished.push_back(m.id);
    }
    std::sort(finished.begin(), finished.end());
    for (int64_t id : finished) {
      const auto it = std::find_if(moving_.begin(), moving_.end(), [&](const Moving& m) { return m.id == id; });
      bytes_completed_ += it->bytes;
      ++completed_;
      moving_.erase(it);
      done.push_back(id);
    }
  }
  Progress(now);
  return done;
}

}  // namespace fleetplan
