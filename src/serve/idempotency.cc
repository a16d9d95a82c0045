#include "serve/idempotency.h"

namespace fleetplan::serve::internal {

std::optional<RequestId> Idempotency::LiveWith(const std::string& key) const {
  const auto it = live_keys_.find(key);
  if (it == live_keys_.end()) return std::nullopt;
  return it->second;
}

const Recorded* Idempotency::Replay(const std::string& key, Clock::time_point now) const {
  const auto it = recorded_.find(key);
  return it != recorded_.end() && it->second.expires > now ? &it->second : nullptr;
}

void Idempotency::Record(const std::string& key, uint64_t body_hash, std::string content_type, std::string body) {
  if (key.empty() || body.empty() || static_cast<int64_t>(body.size()) > options_.idempotency_max_body) return;
  const Clock::time_point expires = Clock::now() + std::chrono::nanoseconds(options_.idempotency_window.ns());
  while (static_cast<int64_t>(recorded_.size()) >= options_.idempotency_entries && !recorded_order_.empty()) {
    recorded_.erase(recorded_order_.front().second);
    recorded_order_.pop_front();
  }
  recorded_[key] = Recorded{body_hash, std::move(content_type), std::move(body), expires};
  recorded_order_.emplace_back(expires, key);
}

void Idempotency::Expire(Clock::time_point now) {
  while (!recorded_order_.empty() && recorded_order_.front().first <= now) {
    auto it = recorded_.find(recorded_order_.front().second);
    if (it != recorded_.end() && it->second.expires <= now) recorded_.erase(it);
    recorded_order_.pop_front();
  }
}

}  // namespace fleetplan::serve::internal
