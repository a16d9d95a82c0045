// Port (port.h): accepting connections, the periodic sweep (slow clients, stalled
// streams, expired idempotency records), cancellation and the shutdown's steps.
#include "serve/port.h"

#include <fmt/format.h>

#include "serve/connection.h"

namespace fleetplan::serve::internal {
namespace {

constexpr auto kSweepPeriod = std::chrono::milliseconds(100);   // slow-client and retention checks
constexpr auto kAcceptBackoff = std::chrono::milliseconds(50);  // an accept that failed (EMFILE) waits, never spins

}  // namespace

Port::Port(Shared& shared, EngineClock& clock, int32_t replica, const ReplicaSetup& setup)
    : shared_(shared), clock_(clock), index_(replica), acceptor_(shared.io), accept_timer_(shared.io),
      sweep_timer_(shared.io), idempotency_(shared.options), metrics_(shared.max_model_len),
      fault_rng_(shared.faults.seed, fmt::format("replica-{}", replica)) {
  block_tokens_ = setup.engine.block_tokens;
  kv_blocks_ = setup.engine.kv_blocks;
  prefix_cache_ = setup.engine.prefix_cache.enabled;
}

Status Port::Listen(const tcp::endpoint& ep) {
  beast::error_code ec;
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return InvalidInput(fmt::format("replica {}: cannot listen on {}:{}: {}", index_, ep.address().to_string(), ep.port(),
                                    ec.message()));
  }
  return Status::Ok();
}

void Port::Start() {
  Accept();
  Sweep();
}

void Port::Stop() {
  stopped_ = true;
  beast::error_code ec;
  acceptor_.close(ec);
  accept_timer_.cancel();
  sweep_timer_.cancel();
  for (auto& [id, l] : live_) {
    if (auto c = l->conn.lock()) c->Close();
  }
}

void Port::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket sock) {
    if (stopped_ || shared_.draining) return;
    if (ec) {
      // Out of descriptors (EMFILE) or another failure: the pending connection stays in
      // the backlog; accepting again at once would spin on the same error.
      accept_timer_.expires_after(kAcceptBackoff);
      accept_timer_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    beast::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    const bool over = shared_.connections >= shared_.options.max_connections;
    auto c = std::make_shared<Connection>(*this, shared_, std::move(sock));
    if (over) {
      c->Refuse();
    } else {
      c->Start();
    }
    Accept();
  });
}

void Port::Drain() {
  beast::error_code ec;
  acceptor_.close(ec);
  accept_timer_.cancel();
}

void Port::EndLive() {
  const ApiError e{503, "the server is shutting down; retry on another replica", "server_error", "", "shutdown"};
  std::vector<RequestId> ids;
  for (const auto& [id, l] : live_) ids.push_back(id);
  for (const RequestId id : ids) {
    Live& l = *live_.at(id);
    if (auto c = l.conn.lock()) c->EndLiveWithError(l.stream_begun, e);
    Forget(id);
  }
}

// Queue time: until an engine first holds the request as running (checked at each pump
// in arrival order; with FCFS admission the front is the next admitted).
void Port::AfterPump(Clock::time_point now) {
  while (!unscheduled_.empty()) {
    auto it = live_.find(unscheduled_.front());
    if (it == live_.end() || it->second->scheduled) {
      unscheduled_.pop_front();
      continue;
    }
    if (!clock_.Scheduled(it->first, index_)) break;
    it->second->scheduled = true;
    metrics_.queue.Observe(Seconds(now - it->second->arrival));
    unscheduled_.pop_front();
  }
}

void Port::OnTransfer(const TransferEvent& e) {
  ++metrics_.transfers[std::string(e.outcome)];
  if (e.delayed) ++metrics_.faults["kv_transfer_delay"];
  if (e.outcome == "failed") ++metrics_.faults["kv_transfer_failure"];
  if (e.outcome == "completed") metrics_.transfer_time.Observe((e.end - e.start).seconds());
}

void Port::Sweep() {
  const Clock::time_point now = Clock::now();
  const auto timeout = std::chrono::nanoseconds(shared_.options.slow_client_timeout.ns());
  std::vector<RequestId> slow, resumed;
  for (const auto& [id, l] : live_) {
    if (l->paused && now - l->paused_since > timeout) slow.push_back(id);
    if (l->stall_at >= 0 && l->stall_until != Clock::time_point() && now >= l->stall_until) resumed.push_back(id);
  }
  for (const RequestId id : resumed) {  // a resumed stream may finish (and leave live_)
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    if (auto c = it->second->conn.lock(); c && !c->closed()) {
      RenderTokens(*it->second, *c);
      c->Flush();
    }
  }
  for (const RequestId id : slow) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    ++metrics_.slow_cancels;
    if (auto c = it->second->conn.lock()) c->Close();
    if (it->second->engine_done) {
      Forget(id);  // complete in the engine (counted there), held back here
    } else {
      Cancel(*it->second);
    }
  }
  idempotency_.Expire(now);
  if (!slow.empty()) Pump();
  sweep_timer_.expires_after(kSweepPeriod);
  sweep_timer_.async_wait([this](beast::error_code ec) {
    if (!ec) Sweep();
  });
}

void Port::ClientGone(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  ++metrics_.client_cancels;
  if (it->second->engine_done) return Forget(id);  // held-back output of a finished request
  Cancel(*it->second);
  Pump();
}

void Port::CancelRoute(const std::shared_ptr<Connection>& c, std::string_view id) {
  const std::string key(id);
  RequestId found = -1;
  if (auto live = idempotency_.LiveWith(key)) found = *live;
  if (found < 0) {
    for (const auto& [rid, l] : live_) {
      if (l->head.id == key) found = rid;
    }
  }
  auto it = live_.find(found);
  if (it == live_.end()) {
    ApiError e{404, fmt::format("no live request '{}'", key), "invalid_request_error", "", "request_not_found"};
    return c->SendError(e);
  }
  ++metrics_.route_cancels;
  const std::string rid = it->second->head.id;
  if (it->second->engine_done) {
    if (auto conn = it->second->conn.lock()) conn->Close();
    Forget(found);  // complete in the engine (counted there), held back here
  } else {
    Cancel(*it->second);
    Pump();
  }
  c->SendFull(http::status::ok, "application/json", Json{{"id", rid}, {"object", "request.cancelled"}}.dump());
}

void Port::Forget(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  if (!it->second->idem_key.empty()) idempotency_.EndLive(it->second->idem_key);
  live_.erase(it);
}

}  // namespace fleetplan::serve::internal
