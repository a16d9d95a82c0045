// Idempotency of one replica's requests (docs/serve.md "Idempotency"): the X-Request-Id
// keys of its live requests and the recorded responses of its completed ones.
//
// A key names at most one live request (a second one gets 409). A completed request's
// response is kept for options.idempotency_window of wall time, so a retry with the same
// key and body is replayed from it (a different body gets 422); at most
// options.idempotency_entries are kept (the oldest dropped first), and responses larger
// than options.idempotency_max_body are not recorded.
// Thread model: the I/O thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "fleetplan/workload/request.h"
#include "serve/io.h"

namespace fleetplan::serve::internal {

// What a response needs beyond the request: a recorded copy for idempotent replays.
struct Recorded {
  uint64_t body_hash = 0;
  std::string content_type;
  std::string body;
  Clock::time_point expires;
};

class Idempotency {
 public:
  explicit Idempotency(const ServeOptions& options) : options_(options) {}

  // The live request holding `key`, if any.
  std::optional<RequestId> LiveWith(const std::string& key) const;
  // REQUIRES: no live request holds `key`.
  void AddLive(const std::string& key, RequestId id) { live_keys_[key] = id; }
  void EndLive(const std::string& key) { live_keys_.erase(key); }

  // The recorded response of `key` whose window has not ended at `now`, or null.
  const Recorded* Replay(const std::string& key, Clock::time_point now) const;
  // Records `key`'s response until now + the window, dropping the oldest records first
  // while the entry limit is reached. An empty key or body, or a body over the size
  // limit, is not recorded.
  void Record(const std::string& key, uint64_t body_hash, std::string content_type, std::string body);
  // Drops the records whose window ended at or before `now`.
  void Expire(Clock::time_point now);

 private:
  const ServeOptions& options_;
  std::map<std::string, RequestId> live_keys_;
  std::map<std::string, Recorded> recorded_;
  std::deque<std::pair<Clock::time_point, std::string>> recorded_order_;  // by insertion
};

}  // namespace fleetplan::serve::internal
