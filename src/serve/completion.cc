// Port (port.h): a completion request from its HTTP body to the engine. Validation
// (openai.h's parser, the model or adapter, X-Request-Id), the idempotency check (409 for
// a live key, a replay or 422 for a completed one), the faults.serve draws, the answer's
// plan (length, seed, stop strings) and the submission at the simulated time the request
// was read; a stream's headers leave only once the engine has accepted the request.
#include <fmt/format.h>

#include <ctime>

#include "fleetplan/core/rng.h"
#include "serve/connection.h"
#include "serve/port.h"

namespace fleetplan::serve::internal {
namespace {

constexpr size_t kMaxRequestIdBytes = 128;  // X-Request-Id: it becomes the response id

// Empty (none given) or 1..128 printable ASCII bytes without spaces: it is echoed in
// headers, ids and JSON.
bool IsRequestId(std::string_view id) {
  if (id.size() > kMaxRequestIdBytes) return false;
  for (const char ch : id) {
    if (ch <= 0x20 || ch >= 0x7f) return false;
  }
  return true;
}

}  // namespace

// faults.serve: three draws per request, always, so the sequence is the same whichever fires.
FaultDraw Port::DrawFaults() {
  FaultDraw d;
  if (!shared_.faults.any()) return d;
  const double e = fault_rng_.NextDouble();
  const double sp = fault_rng_.NextDouble();
  d.stall_draw = fault_rng_.NextDouble();
  double cumulative = 0;
  for (const auto& [status, p] : shared_.faults.errors) {
    cumulative += p;
    if (e < cumulative) {
      ++metrics_.faults[fmt::format("error_{}", status)];
      d.error = status;
      return d;
    }
  }
  if (sp < shared_.faults.spike_probability) {
    d.spike = shared_.faults.spike_delay;
    ++metrics_.faults["latency_spike"];
  }
  return d;
}

void Port::SendInjectedError(Connection& c, int status) {
  Headers headers;
  if (status == 429 || status == 503) headers.emplace_back("Retry-After", fmt::to_string(shared_.options.retry_after_seconds));
  c.SendError(ApiError{status, fmt::format("injected fault: HTTP {} (faults.serve.errors)", status),
                       status == 429 ? "rate_limit_error" : status >= 500 ? "server_error" : "invalid_request_error", "",
                       "injected_fault"},
              std::move(headers));
}

bool Port::AnsweredByKey(Connection& c, const std::string& key, uint64_t body_hash, Clock::time_point arrival) {
  if (key.empty()) return false;
  if (idempotency_.LiveWith(key)) {
    ++metrics_.conflicts;
    c.SendError(ApiError{409, fmt::format("a request with X-Request-Id '{}' is in progress", key),
                         "invalid_request_error", "", "request_in_progress"});
    return true;
  }
  const Recorded* recorded = idempotency_.Replay(key, arrival);
  if (recorded == nullptr) return false;
  if (recorded->body_hash != body_hash) {
    c.SendError(ApiError{422, fmt::format("X-Request-Id '{}' was used with a different body", key),
                         "invalid_request_error", "", "idempotency_key_reused"});
    return true;
  }
  ++metrics_.replays;
  c.SendFull(http::status::ok, recorded->content_type, recorded->body,
             {{"X-Request-Id", key}, {"X-Idempotent-Replay", "true"}});
  return true;
}

// The answer's length and text limit: max_tokens, the class's output distribution, stop
// strings (docs/serve.md "Tokens").
std::optional<ApiError> Port::PlanOutput(const ApiRequest& req, Live& l, std::span<const int64_t> ids) {
  const int64_t prompt = static_cast<int64_t>(ids.size());
  const int64_t room = shared_.max_model_len - prompt;
  if (room < 1 || (req.max_tokens && *req.max_tokens > room)) {
    const int64_t asked = req.max_tokens.value_or(1);
    return ApiError{400, fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                                     "({} in the prompt, {} in the completion). Please reduce the length of the prompt "
                                     "or the completion.",
                                     shared_.max_model_len, prompt + asked, prompt, asked),
                    "invalid_request_error", req.endpoint == Endpoint::kChat ? "messages" : "prompt",
                    "context_length_exceeded"};
  }
  l.prompt_tokens = prompt;
  l.max_tokens = req.max_tokens.value_or(room);
  if (req.seed) {
    l.seed = *req.seed;
  } else {
    uint64_t h = Fnv1a64(req.model);
    for (const int64_t id : ids) h = SplitMix64(h ^ static_cast<uint64_t>(id));
    l.seed = h;
  }
  if (req.ignore_eos || shared_.classes.empty()) {
    l.output_tokens = l.max_tokens;
    l.finish = "length";
  } else {
    RngStream rng(l.seed, "serve.output_tokens");
    const int64_t drawn = shared_.classes.front().output_tokens.Sample(rng);
    l.output_tokens = std::min(drawn, l.max_tokens);
    l.finish = drawn >= l.max_tokens ? "length" : "stop";
  }
  if (!req.stop.empty()) {
    std::string text;
    for (int64_t i = 0; i < l.output_tokens; ++i) {
      const size_t before = text.size();
      text += l.TokenText(i);
      size_t best = std::string::npos;
      const std::string* which = nullptr;
      for (const std::string& s : req.stop) {
        const size_t from = before >= s.size() ? before - s.size() + 1 : 0;
        const size_t at = text.find(s, from);
        if (at != std::string::npos && at < best) {
          best = at;
          which = &s;
        }
      }
      if (which != nullptr) {
        l.output_tokens = i + 1;
        l.text_limit = best;
        l.finish = "stop";
        l.stop_reason = *which;
        break;
      }
    }
  }
  return std::nullopt;
}

void Port::Complete(const std::shared_ptr<Connection>& c, Endpoint endpoint,
                       const http::request<http::string_body>& http_req) {
  const Clock::time_point arrival = Clock::now();
  if (shared_.draining) {
    return c->SendError(ApiError{503, "the server is shutting down; retry on another replica", "server_error", "",
                                 "shutdown"});
  }
  ParseResult parsed = ParseApiRequest(endpoint, http_req.body());
  if (!parsed.request) return c->SendError(parsed.error);
  const ApiRequest& req = *parsed.request;
  const auto adapter = ResolveModel(req.model);
  if (!adapter) {
    ApiError e{404, fmt::format("The model `{}` does not exist.", req.model), "NotFoundError", "model", "model_not_found"};
    e.type = "invalid_request_error";
    return c->SendError(e);
  }
  std::string key;
  if (auto h = http_req.find("x-request-id"); h != http_req.end()) key = std::string(h->value());
  if (!IsRequestId(key)) {
    return c->SendError(ApiError{400, fmt::format("X-Request-Id must be 1..{} printable ASCII characters without spaces",
                                                  kMaxRequestIdBytes),
                                 "invalid_request_error", "X-Request-Id"});
  }
  const uint64_t body_hash = Fnv1a64(http_req.body());
  if (AnsweredByKey(*c, key, body_hash, arrival)) return;
  const FaultDraw fault = DrawFaults();
  if (fault.error) return SendInjectedError(*c, *fault.error);
  Tokenized tok;
  std::span<const int64_t> ids;
  if (req.prompt_is_ids) {
    ids = req.prompt_ids;
  } else {
    tok = Tokenize(req.prompt_text);
    ids = tok.ids;
  }
  auto l = std::make_unique<Live>();
  if (shared_.options.echo) {
    l->echo = req.prompt_is_ids                ? EchoOfIds(ids)
              : req.endpoint == Endpoint::kChat ? EchoOfText(req.last_message)
                                                : EchoOfText(req.prompt_text);
  }
  if (auto err = PlanOutput(req, *l, ids)) return c->SendError(*err);
  if (fault.stall_draw < shared_.faults.stall_probability) {
    RngStream at(l->seed, "serve.stall_at");
    l->stall_at = static_cast<int64_t>(at.NextBelow(static_cast<uint64_t>(l->output_tokens)));
    ++metrics_.faults["stall"];
  }
  l->id = clock_.NextId();
  l->conn = c;
  l->endpoint = endpoint;
  l->stream = req.stream;
  l->include_usage = req.include_usage;
  l->idem_key = key;
  l->body_hash = body_hash;
  l->adapter = *adapter;
  l->arrival = arrival;
  l->head.id = fmt::format("{}-{}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                           key.empty() ? fmt::format("{:x}{:08x}", index_, ++response_counter_) : key);
  l->head.created = static_cast<int64_t>(std::time(nullptr));
  l->head.model = req.model;
  metrics_.max_tokens_hist.Observe(static_cast<double>(l->max_tokens));

  Request r;
  r.id = l->id;
  r.adapter = *adapter;
  // The fleet first catches up with the wall clock: an idle fleet's clock stands at its
  // last event, and a request submitted far ahead of it would have the fleet replay the
  // whole gap (its periodic telemetry refreshes) before the request's first step.
  Pump();
  r.arrival = std::max(clock_.SimOf(arrival), clock_.now()) + fault.spike;
  r.pinned_replica = index_;
  r.prompt = PromptLayout(ids, block_tokens_);
  r.output_tokens = l->output_tokens;
  const RequestId id = l->id;
  Live& live = *l;
  live_.emplace(id, std::move(l));
  if (!key.empty()) idempotency_.AddLive(key, id);
  unscheduled_.push_back(id);
  c->SetLive(id);
  if (Status s = clock_.Submit(r, this); !s.ok()) {
    Forget(id);
    c->ClearLive();
    return c->SendError(ApiError{500, s.message(), "server_error"});
  }
  // Up to the arrival only: a rejection answers 503 before any byte of a stream, and no
  // token of this request comes before its headers (its first step ends after it).
  Pump(r.arrival);
  if (!req.stream || live_.count(id) == 0 || c->closed()) return Pump();
  Headers headers;
  if (!key.empty()) headers.emplace_back("X-Request-Id", key);
  c->BeginStream(std::move(headers));
  live.stream_begun = true;
  if (endpoint == Endpoint::kChat) AppendRoleEvent(c->out(), live.head);
  c->Flush();
  Pump();  // catch up with the wall clock
}

}  // namespace fleetplan::serve::internal
