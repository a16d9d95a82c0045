// Port (port.h): the engine's tokens and outcomes back to the client. A token event is
// written to its stream when the I/O thread handles it (its lateness against the
// simulated schedule is observed); a stream whose connection holds --client-buffer bytes
// unsent is paused, its tokens regenerated from the seed when the client drains; a
// faults.serve stall holds a stream for its wall duration. A finished request gets its
// whole body (or the stream's usage event and [DONE]) and, with an X-Request-Id, a
// recorded copy for replays.
#include <fmt/format.h>

#include "serve/connection.h"
#include "serve/port.h"

namespace fleetplan::serve::internal {

void Port::HandleToken(const TokenEvent& ev) {
  auto it = live_.find(ev.id);
  if (it == live_.end()) return;
  Live& l = *it->second;
  const Clock::time_point now = Clock::now();
  const double late = std::max(0.0, Seconds(now - clock_.WallOf(ev.at)));
  metrics_.lateness.Observe(late);
  metrics_.lateness_max = std::max(metrics_.lateness_max, late);
  if (ev.index == 0) {
    l.first_token = now;
    metrics_.ttft.Observe(Seconds(now - l.arrival));
    metrics_.prompt_tokens += l.prompt_tokens;
    if (!l.scheduled) {
      l.scheduled = true;
      metrics_.queue.Observe(Seconds(now - l.arrival));
    }
  } else {
    metrics_.itl.Observe(Seconds(now - l.last_token));
  }
  l.last_token = now;
  ++metrics_.generation_tokens;
  l.generated = ev.index + 1;
  if (!l.stream) return;
  auto c = l.conn.lock();
  if (!c || c->closed()) return;
  RenderTokens(l, *c);
  c->Flush();
}

// Renders held-back tokens into the connection's buffer up to its cap.
void Port::RenderTokens(Live& l, Connection& c) {
  const size_t cap = static_cast<size_t>(shared_.options.client_buffer_bytes);
  while (l.emitted < l.generated) {
    if (l.emitted == l.stall_at) {
      const Clock::time_point now = Clock::now();
      if (l.stall_until == Clock::time_point()) {
        l.stall_until = now + std::chrono::nanoseconds(static_cast<int64_t>(
                                  static_cast<double>(shared_.faults.stall_duration.ns()) / shared_.options.speed));
      }
      if (now < l.stall_until) return;  // resumed by the sweep
      l.stall_at = -1;
    }
    if (c.buffered() >= cap) {
      if (!l.paused) {
        l.paused = true;
        l.paused_since = Clock::now();
        ++metrics_.slow_pauses;
      }
      return;
    }
    std::string_view tok = l.TokenText(l.emitted);
    const size_t start = l.text_bytes;
    l.text_bytes += tok.size();
    if (l.text_limit != std::string::npos) tok = start >= l.text_limit ? std::string_view() : tok.substr(0, l.text_limit - start);
    ++l.emitted;
    const bool last = l.emitted == l.output_tokens;
    AppendTokenEvent(c.out(), l.endpoint, l.head, tok, last ? std::string_view(l.finish) : std::string_view(),
                     last ? std::string_view(l.stop_reason) : std::string_view());
  }
  l.paused = false;
  if (l.engine_done) FinishStream(l, c);
}

void Port::Drained(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  auto c = it->second->conn.lock();
  if (!c) return;
  if (it->second->emitted < it->second->generated) RenderTokens(*it->second, *c);
}

std::string Port::FinalBody(const Live& l) const {
  const Usage usage{l.prompt_tokens, l.output_tokens};
  if (!l.stream) {
    std::string text;
    text.reserve(static_cast<size_t>(l.output_tokens) * 5);
    for (int64_t i = 0; i < l.output_tokens; ++i) text += l.TokenText(i);
    if (l.text_limit != std::string::npos && l.text_limit < text.size()) text.resize(l.text_limit);
    return CompleteBody(l.endpoint, l.head, text, l.finish, l.stop_reason, usage);
  }
  // The whole event stream, for a replay.
  std::string out;
  if (l.endpoint == Endpoint::kChat) AppendRoleEvent(out, l.head);
  size_t bytes = 0;
  for (int64_t i = 0; i < l.output_tokens; ++i) {
    std::string_view tok = l.TokenText(i);
    const size_t start = bytes;
    bytes += tok.size();
    if (l.text_limit != std::string::npos) tok = start >= l.text_limit ? std::string_view() : tok.substr(0, l.text_limit - start);
    const bool last = i + 1 == l.output_tokens;
    AppendTokenEvent(out, l.endpoint, l.head, tok, last ? std::string_view(l.finish) : std::string_view(),
                     last ? std::string_view(l.stop_reason) : std::string_view());
    if (static_cast<int64_t>(out.size()) > shared_.options.idempotency_max_body) return {};
  }
  if (l.include_usage) AppendUsageEvent(out, l.endpoint, l.head, usage);
  AppendDone(out);
  return out;
}

void Port::Record(const Live& l, std::string content_type, std::string body) {
  idempotency_.Record(l.idem_key, l.body_hash, std::move(content_type), std::move(body));
}

void Port::FinishStream(Live& l, Connection& c) {
  if (l.include_usage) AppendUsageEvent(c.out(), l.endpoint, l.head, Usage{l.prompt_tokens, l.output_tokens});
  AppendDone(c.out());
  c.ClearLive();
  c.EndStream();
  // The replay is built only when a retry could ask for it: building it costs several
  // token writes, and a step that ends 100 streams does this 100 times while the later
  // streams' last tokens wait behind it.
  if (!l.idem_key.empty()) Record(l, "text/event-stream", FinalBody(l));
  Forget(l.id);
}

void Port::OnRequestDone(const RequestOutcome& o) {
  auto it = live_.find(o.id);
  if (it == live_.end()) return;
  Live& l = *it->second;
  auto c = l.conn.lock();
  const Clock::time_point now = Clock::now();
  switch (o.status) {
    case RequestStatus::kOk: {
      l.engine_done = true;
      ++metrics_.success[l.finish];
      metrics_.e2e.Observe(Seconds(now - l.arrival));
      metrics_.prompt_hist.Observe(static_cast<double>(l.prompt_tokens));
      metrics_.gen_hist.Observe(static_cast<double>(l.output_tokens));
      if (!c || c->closed()) return Forget(o.id);
      if (l.stream) {
        if (l.emitted == l.generated && !l.paused) FinishStream(l, *c);
        return;  // else when the client has drained what was held back
      }
      std::string body = FinalBody(l);
      Record(l, "application/json", body);
      c->ClearLive();
      Headers headers;
      if (!l.idem_key.empty()) headers.emplace_back("X-Request-Id", l.idem_key);
      c->SendFull(http::status::ok, "application/json", std::move(body), std::move(headers));
      return Forget(o.id);
    }
    case RequestStatus::kRejected: {
      // The waiting bound, or with pools a transfer that failed its last attempt
      // (deployment.disaggregation.on_failure: reject): the reason says which.
      const bool full = o.reason.starts_with("waiting queue full");
      if (full) ++metrics_.rejected;
      ApiError e{503, fmt::format("the request was rejected ({}); retry later", o.reason), "server_error", "",
                 full ? "queue_full" : "rejected"};
      // After the headers left (a delayed arrival, a prompt computed on a prefill
      // replica): the same error as an event.
      if (c) {
        c->EndLiveWithError(l.stream_begun, e,
                            {{"Retry-After", fmt::to_string(shared_.options.retry_after_seconds)}});
      }
      return Forget(o.id);
    }
    case RequestStatus::kCancelled:
    case RequestStatus::kTimeout:
      ++metrics_.success["abort"];
      if (c) c->Close();
      return Forget(o.id);
  }
}

}  // namespace fleetplan::serve::internal
