// One replica's port: its acceptor and connections, the requests it answers (`Live`), its
// /metrics figures, idempotency records and adapters. The engine is the clock's
// (engine_clock.h); the port turns HTTP requests into engine requests pinned to its
// replica and the engine's tokens and outcomes back into responses.
//
// The port's work is split by concern across files:
//   port.cc             accepting, the periodic sweep (slow clients, stalls, expired
//                       records), cancellation, shutdown
//   completion.cc       a completion request: validation, idempotency, faults.serve draws,
//                       the answer's plan (length, stop strings), submission
//   streaming.cc        tokens and outcomes to the client: SSE events, buffering and
//                       pausing, whole bodies, recorded replays
//   adapters.cc         /v1/models and the LoRA adapter endpoints
//   metrics_endpoint.cc /metrics
//
// Invariants: a request is in `live_` from its submission until its response is done
// (or it is cancelled); `emitted <= generated <= output_tokens`; a paused stream has a
// full connection buffer and resumes when it drains; every faults.serve draw sequence is
// the same whichever fault fires (three draws per request).
// Thread model: the I/O thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fleetplan/core/rng.h"
#include "fleetplan/serve/openai.h"
#include "fleetplan/serve/tokenizer.h"
#include "serve/engine_clock.h"
#include "serve/idempotency.h"
#include "serve/replica_metrics.h"

namespace fleetplan::serve::internal {

class Connection;

// One request in the engine.
struct Live {
  RequestId id = 0;
  std::weak_ptr<Connection> conn;
  Endpoint endpoint = Endpoint::kCompletions;
  bool stream = false;
  bool include_usage = false;
  std::string idem_key;
  uint64_t body_hash = 0;
  ResponseHead head;
  AdapterId adapter = kNoAdapter;
  uint64_t seed = 0;
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 0;
  int64_t output_tokens = 0;        // what the engine will generate
  size_t text_limit = std::string::npos;  // a stop string starts here (bytes of answer text)
  std::string finish;               // "stop" or "length" when the engine completes it
  std::string stop_reason;
  int64_t generated = 0;            // tokens the engine produced
  int64_t emitted = 0;              // tokens rendered to the client
  size_t text_bytes = 0;            // answer bytes before token `emitted` (unclipped)
  bool engine_done = false;
  bool scheduled = false;           // queue time observed
  bool paused = false;
  bool stream_begun = false;
  int64_t stall_at = -1;            // faults.serve.stall: the stream stops before this token
  Clock::time_point stall_until;    // set when the stall starts
  Clock::time_point arrival, first_token, last_token, paused_since;
  EchoText echo;                    // --echo: what the answer repeats (empty: filler)

  // The text of answer token `index`.
  std::string_view TokenText(int64_t index) const {
    return echo.tokens() > 0 ? echo.Token(index) : FillerToken(seed, index);
  }
};

// What faults.serve drew for one request (three draws, always): an injected HTTP error,
// else a latency spike added to its arrival and the draw that decides a stall.
struct FaultDraw {
  std::optional<int> error;  // the injected status; nothing else applies then
  Duration spike;
  double stall_draw = 1;
};

// One replica's port: its acceptor and connections, the requests it answers, its
// /metrics, idempotency records and adapters. The engine is the clock's.
class Port {
 public:
  Port(Shared& shared, EngineClock& clock, int32_t replica, const ReplicaSetup& setup);
  Status Listen(const tcp::endpoint& ep);
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void Start();
  void Stop();
  // A shutdown: Drain stops accepting; EndLive ends what is still live (a stream with an
  // error event and [DONE], a waiting request with 503).
  void Drain();
  void EndLive();
  size_t live_count() const { return live_.size(); }

  // HTTP handlers (the connection sends what they return or starts a stream).
  void Complete(const std::shared_ptr<Connection>& c, Endpoint e, const http::request<http::string_body>& req);
  void CancelRoute(const std::shared_ptr<Connection>& c, std::string_view id);
  void LoadLora(const std::shared_ptr<Connection>& c, std::string_view body, bool load);
  std::string ModelsBody() const;
  std::string MetricsBody() const;
  // The connection of a live request went away.
  void ClientGone(RequestId id);
  // A stream's buffer drained: render what was held back.
  void Drained(RequestId id);
  void CountError(int status) { ++metrics_.http_errors[status]; }

  // From the clock: an output token, a request's end, a KV transfer into this replica,
  // and the end of a pump (queue times).
  void HandleToken(const TokenEvent& ev);
  void OnRequestDone(const RequestOutcome& o);
  void OnTransfer(const TransferEvent& e);
  void AfterPump(Clock::time_point now);

 private:
  void Accept();
  void Pump(std::optional<SimTime> limit = std::nullopt) { clock_.Pump(limit); }
  void Sweep();
  // X-Request-Id `key` of a completion with `body_hash`: 409 while a request holding it
  // is live; its recorded response (422 for another body) while one is kept. True when
  // `c` was answered so.
  bool AnsweredByKey(Connection& c, const std::string& key, uint64_t body_hash, Clock::time_point arrival);
  FaultDraw DrawFaults();
  void SendInjectedError(Connection& c, int status);
  void RenderTokens(Live& l, Connection& c);
  void FinishStream(Live& l, Connection& c);
  void Cancel(Live& l) { clock_.Cancel(l.id); }
  void Forget(RequestId id);
  std::optional<ApiError> PlanOutput(const ApiRequest& req, Live& l, std::span<const int64_t> ids);
  std::string FinalBody(const Live& l) const;
  void Record(const Live& l, std::string content_type, std::string body);
  std::optional<AdapterId> ResolveModel(const std::string& name) const;

  Shared& shared_;
  EngineClock& clock_;
  int32_t index_;  // the replica's id in the clock's fleet
  tcp::acceptor acceptor_;
  net::steady_timer accept_timer_;  // the backoff after a failed accept
  net::steady_timer sweep_timer_;
  int64_t block_tokens_ = 16;
  int64_t kv_blocks_ = 0;
  bool prefix_cache_ = false;
  uint64_t response_counter_ = 0;
  std::unordered_map<RequestId, std::unique_ptr<Live>> live_;
  std::deque<RequestId> unscheduled_;  // arrival order, for the queue-time histogram
  Idempotency idempotency_;
  std::map<std::string, std::string> loras_;  // name -> path
  std::map<std::string, AdapterId> lora_ids_;
  ReplicaMetrics metrics_;
  RngStream fault_rng_;
  bool stopped_ = false;
};

}  // namespace fleetplan::serve::internal
