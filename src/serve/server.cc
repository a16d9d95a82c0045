#include "fleetplan/serve/server.h"

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <iostream>
#include <map>
#include <unordered_map>

#include "fleetplan/core/printable_name.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/rng.h"
#include "fleetplan/fleet/disaggregation.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/serve/openai.h"
#include "fleetplan/serve/prometheus.h"
#include "fleetplan/serve/tokenizer.h"

namespace fleetplan::serve {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// Tunables with a why.
constexpr size_t kHeaderLimit = 16 << 10;        // request line + headers, as uvicorn's h11 default order
constexpr size_t kWatchReadBytes = 4096;         // a disconnect watch reads at most this much ahead
constexpr size_t kMaxReadAhead = 64 << 10;       // pipelined bytes kept while a request is live
constexpr auto kSweepPeriod = std::chrono::milliseconds(100);  // slow-client and retention checks
constexpr auto kAcceptBackoff = std::chrono::milliseconds(50);  // an accept that failed (EMFILE) waits, never spins
constexpr auto kDrainPoll = std::chrono::milliseconds(10);      // how often a shutdown looks for live requests
constexpr auto kFinalFlush = std::chrono::milliseconds(200);    // a shutdown's last events get this long to leave

constexpr size_t kMaxRequestIdBytes = 128;       // X-Request-Id: it becomes the response id
// A pump handles at most this many event times, then yields the I/O thread (sockets,
// timers, signals) and continues: a clock far behind the wall catches up in slices.
constexpr int kMaxEventTimesPerPump = 1000;
constexpr double kMaxClockNs = 4e18;  // about 127 years: below int64's range on either clock

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Empty (none given) or 1..128 printable ASCII bytes without spaces: it is echoed in
// headers, ids and JSON.
bool IsRequestId(std::string_view id) {
  if (id.size() > kMaxRequestIdBytes) return false;
  for (const char ch : id) {
    if (ch <= 0x20 || ch >= 0x7f) return false;
  }
  return true;
}

class Connection;
class Port;
class EngineClock;

// What a response needs beyond the request: a recorded copy for idempotent replays.
struct Recorded {
  uint64_t body_hash = 0;
  std::string content_type;
  std::string body;
  Clock::time_point expires;
};

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

// Prometheus state of one replica (vLLM's names; docs/serve.md "Metrics").
struct Metrics {
  Histogram ttft{TtftBuckets()};
  Histogram itl{InterTokenBuckets()};
  Histogram e2e{RequestLatencyBuckets()};
  Histogram queue{RequestLatencyBuckets()};
  Histogram prompt_hist;
  Histogram gen_hist;
  Histogram max_tokens_hist;
  Histogram lateness{LatenessBuckets()};
  double lateness_max = 0;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  std::map<std::string, int64_t> success;  // finished_reason -> count
  int64_t client_cancels = 0;
  int64_t route_cancels = 0;
  int64_t slow_pauses = 0;
  int64_t slow_cancels = 0;
  int64_t conflicts = 0;
  int64_t replays = 0;
  int64_t rejected = 0;
  std::map<int, int64_t> http_errors;  // status -> count
  std::map<std::string, int64_t> faults;  // kind -> count (faults.serve, faults.kv_transfer)
  std::map<std::string, int64_t> transfers;  // KV transfers into this replica, by outcome
  Histogram transfer_time{TtftBuckets()};  // simulated, completed transfers (ms to s)
  explicit Metrics(int64_t max_len)
      : prompt_hist(Buckets125(max_len)), gen_hist(Buckets125(max_len)), max_tokens_hist(Buckets125(max_len)) {
    for (const char* r : {"stop", "length", "abort"}) success[r] = 0;
  }
};

struct Shared {
  // Before `io`: a connection destroyed with io's pending handlers still counts itself out.
  int64_t connections = 0;  // open, all ports (options.max_connections)
  bool draining = false;    // Stop was called: no new requests; live ones may finish
  net::io_context io{1};
  ServeOptions options;
  std::string model;
  int64_t max_model_len = 0;
  std::vector<ClassSpec> classes;
  uint64_t seed = 0;
  ServeFaults faults;
  Status failure = Status::Ok();
};

// The fleet every port shares, stepped in real time: one fleet kernel holding every
// replica (so prefill/decode pools hand requests over as in `simulate`), one timer armed
// at the wall time of its next event. A request carries the replica of the port it
// reached (Request::pinned_replica); its tokens and outcome go back to that port.
class EngineClock final : public EngineObserver, public FleetObserver {
 public:
  explicit EngineClock(Shared& shared) : shared_(shared), timer_(shared.io) {}
  Status Init(const FleetSetup& setup);
  void Attach(int32_t replica, Port* port) { ports_[static_cast<size_t>(replica)] = port; }
  void Start() { origin_ = Clock::now(); }
  void Stop() {
    stopped_ = true;
    timer_.cancel();
  }

  SimTime SimOf(Clock::time_point t) const;
  Clock::time_point WallOf(SimTime t) const;
  SimTime now() const { return sim_->now(); }
  RequestId NextId() { return next_id_++; }
  // One id per adapter name for the whole fleet: the same name is the same adapter on
  // every replica (its residency is still per replica).
  AdapterId AdapterIdOf(const std::string& name);
  // Submits `r` (pinned to `port`'s replica) at its arrival.
  Status Submit(const Request& r, Port* port);
  void Cancel(RequestId id);
  // Runs the simulation up to now (or only up to `limit`) and rearms the clock.
  void Pump(std::optional<SimTime> limit = std::nullopt);
  // True once an engine has scheduled `id`: the serving replica's, or a prefill
  // replica's computing its prompt.
  bool Scheduled(RequestId id, int32_t replica) const;
  const Engine& engine(int32_t replica) const { return sim_->replica(replica); }
  PoolRole role(int32_t replica) const { return sim_->role(replica); }
  // True when the fleet has a prefill pool (requests are handed over).
  bool PoolsServed() const { return sim_->component<Disaggregation>() != nullptr; }
  // Disaggregated requests bound for `replica` that its engine does not hold yet (they
  // wait for a decode slot, a prefill or their KV): vLLM counts them as waiting.
  int64_t PendingHandoffs(int32_t replica) const;

  void OnRequestDone(const RequestOutcome& o) override;
  void OnRoute(const RouteEvent&) override {}
  void OnTransfer(const TransferEvent& e) override;

 private:
  void ArmTimer();

  Shared& shared_;
  net::steady_timer timer_;
  std::unique_ptr<Simulation> sim_;
  Clock::time_point origin_;
  std::vector<Port*> ports_;                      // by replica id
  std::unordered_map<RequestId, Port*> owner_;    // requests the engines hold (lookup only)
  std::map<std::string, AdapterId> adapter_ids_;
  RequestId next_id_ = 0;
  bool stopped_ = false;
  bool in_pump_ = false;
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
  std::map<std::string, RequestId> live_keys_;
  std::map<std::string, Recorded> recorded_;
  std::deque<std::pair<Clock::time_point, std::string>> recorded_order_;
  std::map<std::string, std::string> loras_;  // name -> path
  std::map<std::string, AdapterId> lora_ids_;
  Metrics metrics_;
  RngStream fault_rng_;
  bool stopped_ = false;
};

// One TCP connection: reads requests with Beast's parser, writes whole responses or a
// chunked event stream, and watches for the client going away while a request is live.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Port& rep, Shared& shared, tcp::socket sock)
      : rep_(rep), shared_(shared), sock_(std::move(sock)), deadline_(shared.io) {
    ++shared_.connections;
  }
  ~Connection() { --shared_.connections; }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start() { ReadRequest(); }
  // One connection over options.max_connections: a 503 and the connection closed.
  void Refuse() {
    keep_alive_ = false;
    const std::string message =
        fmt::format("the server holds its maximum of {} connections; retry later", shared_.options.max_connections);
    ApiError e{503, message, "server_error", "", "too_many_connections"};
    SendError(e, {{"Retry-After", fmt::to_string(shared_.options.retry_after_seconds)}});
  }

  // A whole response; the connection reads the next request after it (keep-alive).
  void SendFull(http::status status, std::string content_type, std::string body,
                std::vector<std::pair<std::string, std::string>> headers = {}) {
    auto res = std::make_unique<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "fleetplan");
    res->set(http::field::content_type, content_type);
    for (auto& [k, v] : headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    res->body() = std::move(body);
    res->prepare_payload();
    full_ = std::move(res);
    DoWrite();
  }
  void SendError(const ApiError& e, std::vector<std::pair<std::string, std::string>> headers = {}) {
    rep_.CountError(e.status);
    SendFull(static_cast<http::status>(e.status), "application/json", ErrorBody(e), std::move(headers));
  }
  // Ends this connection's live request with `e`: once its stream's headers have left, as
  // an error event, [DONE] and the stream's end; before, as an HTTP error with `headers`.
  void EndLiveWithError(bool stream_begun, const ApiError& e,
                        std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (closed_) return;
    ClearLive();
    if (!stream_begun) return SendError(e, std::move(headers));
    out_ += "data: " + ErrorBody(e) + "\n\n";
    AppendDone(out_);
    EndStream();
  }
  // Starts a chunked text/event-stream response.
  void BeginStream(std::vector<std::pair<std::string, std::string>> headers) {
    head_ = std::make_unique<http::response<http::empty_body>>(http::status::ok, 11);
    head_->set(http::field::server, "fleetplan");
    head_->set(http::field::content_type, "text/event-stream");
    head_->set(http::field::cache_control, "no-cache");
    for (auto& [k, v] : headers) head_->set(k, v);
    head_->keep_alive(keep_alive_);
    head_->chunked(true);
    serializer_ = std::make_unique<http::response_serializer<http::empty_body>>(*head_);
    head_pending_ = true;
    DoWrite();
  }
  std::string& out() { return out_; }
  size_t buffered() const { return out_.size() + wbuf_.size(); }
  void EndStream() {
    last_pending_ = true;
    DoWrite();
  }
  void Flush() { DoWrite(); }
  void SetLive(RequestId id) {
    live_ = id;
    Watch();
  }
  void ClearLive() { live_.reset(); }
  // Drops the connection (cancelled request, slow client, shutdown).
  void Close() {
    if (closed_) return;
    closed_ = true;
    deadline_.cancel();
    beast::error_code ec;
    sock_.shutdown(tcp::socket::shutdown_both, ec);
    sock_.close(ec);
  }
  bool closed() const { return closed_; }

 private:
  // The next request: a connection that starts none within the idle timeout is closed;
  // one that starts one must deliver it whole within the header timeout (else 408).
  void ReadRequest() {
    if (closed_) return;
    if (shared_.draining) return Close();  // a shutdown takes no new request
    if (buf_.size() > 0) return ReadWhole();  // pipelined bytes are a started request
    awaiting_ = true;
    ArmDeadline(shared_.options.idle_timeout);
    sock_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      self->awaiting_ = false;
      self->deadline_.cancel();
      if (self->closed_) return;
      if (ec) return self->Close();
      self->ReadWhole();
    });
  }

  void ReadWhole() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(static_cast<uint64_t>(shared_.options.max_body_bytes));
    reading_ = true;
    ArmDeadline(shared_.options.header_timeout);
    http::async_read(sock_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->reading_ = false;
      self->deadline_.cancel();
      self->OnRead(ec);
    });
  }

  // Past `d` the pending wait or read is cancelled; OnRead answers a late request 408.
  void ArmDeadline(Duration d) {
    deadline_.expires_after(std::chrono::nanoseconds(d.ns()));
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      if (self->awaiting_) return self->Close();  // idle: nothing to answer
      if (!self->reading_) return;                // the read completed first
      self->timed_out_ = true;
      beast::error_code ignored;
      self->sock_.cancel(ignored);
    });
  }

  void OnRead(beast::error_code ec) {
    if (closed_) return;
    if (timed_out_) {
      timed_out_ = false;
      keep_alive_ = false;
      ApiError e{408, fmt::format("the request did not arrive whole within {} s (--header-timeout)",
                                  shared_.options.header_timeout.seconds())};
      e.code = "request_timeout";
      return SendError(e);
    }
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      ApiError e{413, fmt::format("the request body is larger than {} bytes", shared_.options.max_body_bytes)};
      e.code = "request_too_large";
      return SendError(e);
    }
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return SendError(ApiError{431, "the request headers are too large"});
    }
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted) {
      return Close();
    }
    if (ec) {
      keep_alive_ = false;
      return SendError(ApiError{400, fmt::format("malformed HTTP request: {}", ec.message())});
    }
    http::request<http::string_body> req = parser_->release();
    parser_.reset();
    keep_alive_ = req.keep_alive();
    Route(req);
  }

  void Route(const http::request<http::string_body>& req) {
    std::string_view target(req.target().data(), req.target().size());
    if (const size_t q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
    const auto method = req.method();
    auto need = [&](http::verb v) {
      if (method == v) return true;
      SendError(ApiError{405, fmt::format("{} does not take {}", target, std::string(req.method_string())), "invalid_request_error"});
      return false;
    };
    auto self = shared_from_this();
    if (target == "/v1/completions") {
      if (need(http::verb::post)) rep_.Complete(self, Endpoint::kCompletions, req);
    } else if (target == "/v1/chat/completions") {
      if (need(http::verb::post)) rep_.Complete(self, Endpoint::kChat, req);
    } else if (target == "/health") {
      if (need(http::verb::get)) SendFull(http::status::ok, "application/json", "");
    } else if (target == "/v1/models") {
      if (need(http::verb::get)) SendFull(http::status::ok, "application/json", rep_.ModelsBody());
    } else if (target == "/metrics") {
      if (need(http::verb::get)) SendFull(http::status::ok, "text/plain; version=0.0.4; charset=utf-8", rep_.MetricsBody());
    } else if (target == "/v1/load_lora_adapter") {
      if (need(http::verb::post)) rep_.LoadLora(self, req.body(), true);
    } else if (target == "/v1/unload_lora_adapter") {
      if (need(http::verb::post)) rep_.LoadLora(self, req.body(), false);
    } else if (target.starts_with("/v1/requests/") && target.ends_with("/cancel")) {
      const std::string_view id = target.substr(13, target.size() - 13 - 7);
      if (need(http::verb::post)) rep_.CancelRoute(self, id);
    } else {
      ApiError e{404, fmt::format("no route {}", target)};
      e.type = "not_found_error";
      SendError(e);
    }
  }

  // While a request is live the connection keeps one read outstanding, so a disconnect
  // is seen at once; bytes that arrive (a pipelined request) stay in the buffer.
  void Watch() {
    if (closed_ || watching_ || buf_.size() >= kMaxReadAhead) return;
    watching_ = true;
    sock_.async_read_some(buf_.prepare(kWatchReadBytes), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->watching_ = false;
      if (!ec) {
        self->buf_.commit(n);
        if (self->live_) return self->Watch();
        if (self->want_next_) {
          self->want_next_ = false;
          return self->ReadRequest();
        }
        return;
      }
      if (ec == net::error::operation_aborted && self->want_next_ && !self->closed_) {
        self->want_next_ = false;
        return self->ReadRequest();
      }
      if (ec == net::error::operation_aborted && !self->live_) return;
      self->Gone();
    });
  }

  void Gone() {
    if (closed_) return;
    const auto live = live_;
    Close();
    if (live) rep_.ClientGone(*live);
  }

  void DoWrite() {
    if (writing_ || closed_) return;
    auto self = shared_from_this();
    if (head_pending_) {
      writing_ = true;
      http::async_write_header(sock_, *serializer_, [self](beast::error_code ec, size_t) {
        self->writing_ = false;
        self->head_pending_ = false;
        if (ec) return self->Gone();
        self->DoWrite();
      });
    } else if (!out_.empty()) {
      writing_ = true;
      wbuf_.swap(out_);
      net::async_write(sock_, http::make_chunk(net::buffer(wbuf_)), [self](beast::error_code ec, size_t) {
        self->writing_ = false;
        self->wbuf_.clear();
        if (ec) return self->Gone();
        if (self->live_) self->rep_.Drained(*self->live_);
        self->DoWrite();
      });
    } else if (last_pending_) {
      writing_ = true;
      net::async_write(sock_, http::make_chunk_last(), [self](beast::error_code ec, size_t) {
        self->writing_ = false;
        self->last_pending_ = false;
        self->serializer_.reset();
        self->head_.reset();
        if (ec) return self->Gone();
        self->ResponseDone();
      });
    } else if (full_) {
      writing_ = true;
      http::async_write(sock_, *full_, [self](beast::error_code ec, size_t) {
        self->writing_ = false;
        self->full_.reset();
        if (ec) return self->Gone();
        self->ResponseDone();
      });
    }
  }

  void ResponseDone() {
    live_.reset();
    std::string().swap(wbuf_);
    std::string().swap(out_);
    if (!keep_alive_) {
      beast::error_code ec;
      sock_.shutdown(tcp::socket::shutdown_send, ec);
      return Close();
    }
    if (watching_) {
      want_next_ = true;
      beast::error_code ec;
      sock_.cancel(ec);
      return;
    }
    ReadRequest();
  }

  Port& rep_;
  Shared& shared_;
  tcp::socket sock_;
  net::steady_timer deadline_;  // the idle or header timeout while a request is awaited
  bool awaiting_ = false;       // waiting for a request's first byte
  bool timed_out_ = false;      // the header timeout cancelled the read
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::unique_ptr<http::response<http::string_body>> full_;
  std::unique_ptr<http::response<http::empty_body>> head_;
  std::unique_ptr<http::response_serializer<http::empty_body>> serializer_;
  std::string out_;
  std::string wbuf_;
  std::optional<RequestId> live_;
  bool keep_alive_ = true;
  bool writing_ = false;
  bool reading_ = false;
  bool watching_ = false;
  bool want_next_ = false;
  bool head_pending_ = false;
  bool last_pending_ = false;
  bool closed_ = false;
};

// ---------------------------------------------------------------------------------------
// EngineClock

Status EngineClock::Init(const FleetSetup& setup) {
  ports_.assign(setup.replicas.size(), nullptr);
  FP_ASSIGN_OR_RETURN(sim_, Simulation::Create(setup, this));
  sim_->SetFleetObserver(this);
  sim_->SetTokenCallback([this](const TokenEvent& ev) {
    if (auto it = owner_.find(ev.id); it != owner_.end()) it->second->HandleToken(ev);
  });
  return sim_->Start(nullptr);
}

// Both conversions saturate at kMaxClockNs rather than overflow int64.
SimTime EngineClock::SimOf(Clock::time_point t) const {
  const double ns = static_cast<double>((t - origin_).count()) * shared_.options.speed;
  return SimTime::FromNanos(static_cast<int64_t>(std::min(ns, kMaxClockNs)));
}

Clock::time_point EngineClock::WallOf(SimTime t) const {
  const double ns = std::ceil(static_cast<double>(t.ns()) / shared_.options.speed);
  return origin_ + std::chrono::nanoseconds(static_cast<int64_t>(std::min(ns, kMaxClockNs)));
}

AdapterId EngineClock::AdapterIdOf(const std::string& name) {
  const auto [it, added] = adapter_ids_.emplace(name, static_cast<AdapterId>(adapter_ids_.size()));
  return it->second;
}

Status EngineClock::Submit(const Request& r, Port* port) {
  owner_[r.id] = port;
  Status s = sim_->Submit(r);
  if (!s.ok()) owner_.erase(r.id);
  return s;
}

void EngineClock::Cancel(RequestId id) { sim_->Cancel(id, std::max(SimOf(Clock::now()), sim_->now())); }

void EngineClock::Pump(std::optional<SimTime> limit) {
  if (stopped_ || in_pump_) return;
  in_pump_ = true;
  const Clock::time_point now = Clock::now();
  SimTime t = std::max(SimOf(now), sim_->now());
  if (auto next = sim_->next_event(); next && WallOf(*next) <= now) t = std::max(t, *next);
  if (limit) t = std::max(*limit, sim_->now());
  // Event time by event time, a bounded slice per call: the rest is posted behind what
  // the I/O thread already has to do (a /health, a signal, --exit-after).
  Status s = Status::Ok();
  bool more = false;
  for (int handled = 0; s.ok(); ++handled) {
    const std::optional<SimTime> next = sim_->next_event();
    if (!next || *next > t) {
      s = sim_->RunUntil(t);
      break;
    }
    if (handled == kMaxEventTimesPerPump) {
      more = true;
      break;
    }
    s = sim_->RunUntil(*next);
  }
  in_pump_ = false;
  if (!s.ok()) {
    shared_.failure = InternalError(s.message());
    shared_.io.stop();
    return;
  }
  for (Port* p : ports_) p->AfterPump(now);
  if (more) {
    net::post(shared_.io, [this] { Pump(); });
  } else {
    ArmTimer();
  }
}

void EngineClock::ArmTimer() {
  auto next = sim_->next_event();
  if (!next) return;
  timer_.expires_at(WallOf(*next));
  timer_.async_wait([this](beast::error_code ec) {
    if (!ec) Pump();
  });
}

bool EngineClock::Scheduled(RequestId id, int32_t replica) const {
  auto started = [&](int32_t r) {
    const auto view = sim_->replica(r).request(id);
    return view && (view->running || view->num_computed > 0);
  };
  if (started(replica)) return true;
  if (role(replica) == PoolRole::kPrefill) return false;
  for (int32_t r = 0; r < sim_->replica_count(); ++r) {
    if (role(r) == PoolRole::kPrefill && started(r)) return true;
  }
  return false;
}

int64_t EngineClock::PendingHandoffs(int32_t replica) const {
  const auto* pools = sim_->component<Disaggregation>();
  if (pools == nullptr) return 0;
  ReplicaTelemetry t;
  pools->AddTelemetry(replica, t);
  return t.waiting;
}

void EngineClock::OnRequestDone(const RequestOutcome& o) {
  const auto it = owner_.find(o.id);
  if (it == owner_.end()) return;
  Port* port = it->second;
  owner_.erase(it);
  port->OnRequestDone(o);
}

void EngineClock::OnTransfer(const TransferEvent& e) { ports_[static_cast<size_t>(e.to)]->OnTransfer(e); }

// ---------------------------------------------------------------------------------------
// Port

Port::Port(Shared& shared, EngineClock& clock, int32_t replica, const ReplicaSetup& setup)
    : shared_(shared), clock_(clock), index_(replica), acceptor_(shared.io), accept_timer_(shared.io),
      sweep_timer_(shared.io),
      metrics_(shared.max_model_len), fault_rng_(shared.faults.seed, fmt::format("replica-{}", replica)) {
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
  while (!recorded_order_.empty() && recorded_order_.front().first <= now) {
    auto it = recorded_.find(recorded_order_.front().second);
    if (it != recorded_.end() && it->second.expires <= now) recorded_.erase(it);
    recorded_order_.pop_front();
  }
  if (!slow.empty()) Pump();
  sweep_timer_.expires_after(kSweepPeriod);
  sweep_timer_.async_wait([this](beast::error_code ec) {
    if (!ec) Sweep();
  });
}

std::optional<AdapterId> Port::ResolveModel(const std::string& name) const {
  if (name == shared_.model) return kNoAdapter;
  if (auto it = lora_ids_.find(name); it != lora_ids_.end()) return it->second;
  return std::nullopt;
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
  if (!key.empty()) {
    if (live_keys_.count(key) != 0) {
      ++metrics_.conflicts;
      return c->SendError(ApiError{409, fmt::format("a request with X-Request-Id '{}' is in progress", key),
                                   "invalid_request_error", "", "request_in_progress"});
    }
    if (auto it = recorded_.find(key); it != recorded_.end() && it->second.expires > arrival) {
      if (it->second.body_hash != body_hash) {
        return c->SendError(ApiError{422, fmt::format("X-Request-Id '{}' was used with a different body", key),
                                     "invalid_request_error", "", "idempotency_key_reused"});
      }
      ++metrics_.replays;
      return c->SendFull(http::status::ok, it->second.content_type, it->second.body,
                         {{"X-Request-Id", key}, {"X-Idempotent-Replay", "true"}});
    }
  }
  // faults.serve: three draws per request, always, so the sequence is the same whichever fires.
  Duration spike;
  double stall_draw = 1;
  if (shared_.faults.any()) {
    const double e = fault_rng_.NextDouble();
    const double sp = fault_rng_.NextDouble();
    stall_draw = fault_rng_.NextDouble();
    double cumulative = 0;
    for (const auto& [status, p] : shared_.faults.errors) {
      cumulative += p;
      if (e < cumulative) {
        ++metrics_.faults[fmt::format("error_{}", status)];
        std::vector<std::pair<std::string, std::string>> headers;
        if (status == 429 || status == 503) headers.emplace_back("Retry-After", fmt::to_string(shared_.options.retry_after_seconds));
        return c->SendError(ApiError{status, fmt::format("injected fault: HTTP {} (faults.serve.errors)", status),
                                     status == 429 ? "rate_limit_error" : status >= 500 ? "server_error" : "invalid_request_error",
                                     "", "injected_fault"},
                            std::move(headers));
      }
    }
    if (sp < shared_.faults.spike_probability) {
      spike = shared_.faults.spike_delay;
      ++metrics_.faults["latency_spike"];
    }
  }
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
  if (stall_draw < shared_.faults.stall_probability) {
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
  r.arrival = std::max(clock_.SimOf(arrival), clock_.now()) + spike;
  r.pinned_replica = index_;
  r.prompt = PromptLayout(ids, block_tokens_);
  r.output_tokens = l->output_tokens;
  const RequestId id = l->id;
  Live& live = *l;
  live_.emplace(id, std::move(l));
  if (!key.empty()) live_keys_[key] = id;
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
  std::vector<std::pair<std::string, std::string>> headers;
  if (!key.empty()) headers.emplace_back("X-Request-Id", key);
  c->BeginStream(std::move(headers));
  live.stream_begun = true;
  if (endpoint == Endpoint::kChat) AppendRoleEvent(c->out(), live.head);
  c->Flush();
  Pump();  // catch up with the wall clock
}

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
  if (l.idem_key.empty() || body.empty() || static_cast<int64_t>(body.size()) > shared_.options.idempotency_max_body) return;
  const Clock::time_point expires = Clock::now() + std::chrono::nanoseconds(shared_.options.idempotency_window.ns());
  while (static_cast<int64_t>(recorded_.size()) >= shared_.options.idempotency_entries && !recorded_order_.empty()) {
    recorded_.erase(recorded_order_.front().second);
    recorded_order_.pop_front();
  }
  recorded_[l.idem_key] = Recorded{l.body_hash, std::move(content_type), std::move(body), expires};
  recorded_order_.emplace_back(expires, l.idem_key);
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
      std::vector<std::pair<std::string, std::string>> headers;
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
  if (auto k = live_keys_.find(key); k != live_keys_.end()) found = k->second;
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
  if (!it->second->idem_key.empty()) live_keys_.erase(it->second->idem_key);
  live_.erase(it);
}

void Port::LoadLora(const std::shared_ptr<Connection>& c, std::string_view body, bool load) {
  if (FindJsonNestingBeyond(body) != std::string_view::npos) {
    return c->SendError(ApiError{400, fmt::format("the body has {}", JsonNestingMessage())});
  }
  Json j;
  try {
    j = ParseJsonText(body);
  } catch (const Json::parse_error& e) {
    return c->SendError(ApiError{400, fmt::format("the body is not valid JSON: {}", e.what())});
  }
  if (!j.is_object() || !j.contains("lora_name") || !j["lora_name"].is_string() || j["lora_name"].get<std::string>().empty()) {
    return c->SendError(ApiError{400, "'lora_name' must be a non-empty string", "invalid_request_error", "lora_name"});
  }
  const std::string name = j["lora_name"].get<std::string>();
  if (Status printable = CheckPrintableName(name); !printable.ok()) {
    return c->SendError(ApiError{400, fmt::format("'lora_name' {}", printable.message()), "invalid_request_error",
                                 "lora_name"});
  }
  if (load) {
    if (!j.contains("lora_path") || !j["lora_path"].is_string()) {
      return c->SendError(ApiError{400, "'lora_path' must be a string", "invalid_request_error", "lora_path"});
    }
    if (name == shared_.model || loras_.count(name) != 0) {
      return c->SendError(ApiError{400, fmt::format("The lora adapter '{}' has already been loaded.", name),
                                   "invalid_request_error", "lora_name"});
    }
    if (static_cast<int64_t>(loras_.size()) >= shared_.options.max_loras) {
      return c->SendError(ApiError{400, fmt::format("at most {} LoRA adapters may be loaded (--max-loras)", shared_.options.max_loras),
                                   "invalid_request_error", "lora_name"});
    }
    loras_[name] = j["lora_path"].get<std::string>();
    lora_ids_[name] = clock_.AdapterIdOf(name);
    return c->SendFull(http::status::ok, "text/plain", fmt::format("Success: LoRA adapter '{}' added successfully.", name));
  }
  if (loras_.erase(name) == 0) {
    ApiError e{404, fmt::format("The lora adapter '{}' cannot be found.", name), "not_found_error", "lora_name"};
    return c->SendError(e);
  }
  lora_ids_.erase(name);
  c->SendFull(http::status::ok, "text/plain", fmt::format("Success: LoRA adapter '{}' removed successfully.", name));
}

std::string Port::ModelsBody() const {
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  Json data = Json::array();
  data.push_back({{"id", shared_.model}, {"object", "model"}, {"created", created}, {"owned_by", "fleetplan"},
                  {"root", shared_.model}, {"parent", nullptr}, {"max_model_len", shared_.max_model_len}});
  for (const auto& [name, path] : loras_) {
    data.push_back({{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "fleetplan"}, {"root", path},
                    {"parent", shared_.model}, {"max_model_len", shared_.max_model_len}});
  }
  return Json{{"object", "list"}, {"data", data}}.dump();
}

std::string Port::MetricsBody() const {
  const Engine& e = clock_.engine(index_);
  const std::string labels = fmt::format("engine=\"0\",model_name=\"{}\"", LabelValue(shared_.model));
  std::string out;
  out.reserve(16 << 10);
  auto gauge = [&](std::string_view name, std::string_view help, double v) {
    AppendHelp(out, name, "gauge", help);
    out += fmt::format("{}{{{}}} {}\n", name, labels, PromNumber(v));
  };
  auto counter = [&](std::string_view name, std::string_view help, double v) {
    AppendHelp(out, name, "counter", help);
    out += fmt::format("{}_total{{{}}} {}\n", name, labels, PromNumber(v));
  };
  auto histogram = [&](std::string_view name, std::string_view help, const Histogram& h) {
    AppendHelp(out, name, "histogram", help);
    h.Render(out, name, labels);
  };
  const EngineStats& st = e.stats();
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", static_cast<double>(e.running_count()));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        static_cast<double>(e.waiting_count() + clock_.PendingHandoffs(index_)));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        e.pool().total() > 0 ? static_cast<double>(e.pool().used_count()) / static_cast<double>(e.pool().total()) : 0.0);
  counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
          static_cast<double>(st.prefix_cache.lookup_tokens));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          static_cast<double>(st.prefix_cache.hit_tokens));
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", static_cast<double>(st.preemptions));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(metrics_.prompt_tokens));
  counter("vllm:generation_tokens", "Number of generation tokens processed.", static_cast<double>(metrics_.generation_tokens));
  AppendHelp(out, "vllm:request_success", "counter", "Count of successfully processed requests.");
  for (const auto& [reason, n] : metrics_.success) {
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels, reason,
                       PromNumber(static_cast<double>(n)));
  }
  histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", metrics_.prompt_hist);
  histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", metrics_.gen_hist);
  histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", metrics_.max_tokens_hist);
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", metrics_.ttft);
  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", metrics_.itl);
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", metrics_.e2e);
  histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", metrics_.queue);
  // LoRA: running / waiting adapters by name, as vLLM's info gauge (value: unix time).
  std::map<AdapterId, std::string> names;
  for (const auto& [name, id] : lora_ids_) names[id] = name;
  std::set<std::string> running, waiting;
  for (const auto& [id, l] : live_) {
    if (l->adapter == kNoAdapter) continue;
    auto n = names.find(l->adapter);
    if (n == names.end()) continue;
    (l->generated > 0 || l->scheduled ? running : waiting).insert(n->second);
  }
  auto join = [](const std::set<std::string>& s) {
    std::string r;
    for (const auto& x : s) r += (r.empty() ? "" : ",") + x;
    return r;
  };
  AppendHelp(out, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
  out += fmt::format("vllm:lora_requests_info{{max_lora=\"{}\",running_lora_adapters=\"{}\",waiting_lora_adapters=\"{}\"}} {}\n",
                     shared_.options.max_loras, LabelValue(join(running)), LabelValue(join(waiting)),
                     PromNumber(static_cast<double>(std::time(nullptr))));
  AppendHelp(out, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  out += fmt::format("vllm:cache_config_info{{block_size=\"{}\",enable_prefix_caching=\"{}\",engine=\"0\",num_gpu_blocks=\"{}\"}} 1.0\n",
                     block_tokens_, prefix_cache_ ? "True" : "False", kv_blocks_);
  // The emulator's own figures.
  histogram("fleetplan:token_lateness_seconds",
            "How late each output token left against the simulated schedule (wall now - wall of its simulated time).",
            metrics_.lateness);
  gauge("fleetplan:token_lateness_max_seconds", "Largest token lateness seen.", metrics_.lateness_max);
  gauge("fleetplan:kv_blocks_referenced", "KV block references held by live requests (0 at rest).",
        static_cast<double>(e.pool().total_refs()));
  gauge("fleetplan:kv_blocks_used", "KV blocks in use (held by a live request).", static_cast<double>(e.pool().used_count()));
  gauge("fleetplan:live_requests", "Requests the server holds (engine or held-back output).", static_cast<double>(live_.size()));
  gauge("fleetplan:engine_live_requests", "Requests the engine holds.", static_cast<double>(e.live_requests()));
  counter("fleetplan:client_disconnect_cancellations", "Requests cancelled because their client went away.",
          static_cast<double>(metrics_.client_cancels));
  counter("fleetplan:cancel_route_cancellations", "Requests cancelled by POST /v1/requests/{id}/cancel.",
          static_cast<double>(metrics_.route_cancels));
  counter("fleetplan:slow_client_pauses", "Streams paused because their output buffer was full.",
          static_cast<double>(metrics_.slow_pauses));
  counter("fleetplan:slow_client_cancellations", "Streams cancelled after staying paused past the slow-client timeout.",
          static_cast<double>(metrics_.slow_cancels));
  counter("fleetplan:duplicate_request_conflicts", "Requests refused with 409: their X-Request-Id was live.",
          static_cast<double>(metrics_.conflicts));
  counter("fleetplan:idempotent_replays", "Completed responses replayed for a repeated X-Request-Id.",
          static_cast<double>(metrics_.replays));
  counter("fleetplan:queue_full_rejections", "Requests answered 503: the engine's waiting bound was hit.",
          static_cast<double>(metrics_.rejected));
  AppendHelp(out, "fleetplan:faults_injected", "counter", "Faults injected from faults.serve, by kind.");
  for (const auto& [kind, n] : metrics_.faults) {
    out += fmt::format("fleetplan:faults_injected_total{{{},kind=\"{}\"}} {}\n", labels, kind, PromNumber(static_cast<double>(n)));
  }
  AppendHelp(out, "fleetplan:replica_info", "gauge", "This port's replica in the fleet: its id and pool role.");
  out += fmt::format("fleetplan:replica_info{{replica=\"{}\",role=\"{}\"}} 1\n", index_, PoolRoleName(clock_.role(index_)));
  if (clock_.role(index_) != PoolRole::kPrefill && clock_.PoolsServed()) {
    AppendHelp(out, "fleetplan:kv_transfers", "counter", "KV transfers into this replica from the prefill pool, by outcome.");
    for (const char* outcome : {"completed", "failed", "timeout", "cancelled"}) {
      const auto it = metrics_.transfers.find(outcome);
      out += fmt::format("fleetplan:kv_transfers_total{{{},outcome=\"{}\"}} {}\n", labels, outcome,
                         PromNumber(static_cast<double>(it == metrics_.transfers.end() ? 0 : it->second)));
    }
    histogram("fleetplan:kv_transfer_seconds", "Simulated time of each completed KV transfer into this replica.",
              metrics_.transfer_time);
  }
  AppendHelp(out, "fleetplan:http_errors", "counter", "Error responses by status.");
  for (const auto& [status, n] : metrics_.http_errors) {
    out += fmt::format("fleetplan:http_errors_total{{{},status=\"{}\"}} {}\n", labels, status, PromNumber(static_cast<double>(n)));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Server

struct Server::Impl {
  Shared shared;
  std::unique_ptr<EngineClock> clock;
  std::vector<std::unique_ptr<Port>> ports;
  std::vector<uint16_t> numbers;
  std::vector<PoolRole> roles;
  // The shutdown (Server::Stop): drain, then end what is left, then stop.
  std::function<void(const std::string&)> log;
  std::unique_ptr<net::steady_timer> drain_timer;
  Clock::time_point drain_deadline;
  bool ending = false;

  size_t Live() const {
    size_t n = 0;
    for (const auto& p : ports) n += p->live_count();
    return n;
  }
  void Log(const std::string& line) const {
    if (log) log(line);
  }
  void BeginShutdown();
  void WaitForDrain();
  void EndShutdown();
};

void Server::Impl::BeginShutdown() {
  if (shared.draining) return EndShutdown();  // a second Stop: no more grace
  shared.draining = true;
  for (auto& p : ports) p->Drain();
  const size_t live = Live();
  if (live > 0) {
    Log(fmt::format("stopping: {} live request(s) may finish within {} s (--shutdown-grace; again to stop now)", live,
                    shared.options.shutdown_grace.seconds()));
  }
  drain_deadline = Clock::now() + std::chrono::nanoseconds(shared.options.shutdown_grace.ns());
  WaitForDrain();
}

void Server::Impl::WaitForDrain() {
  if (ending) return;
  if (Live() == 0 || Clock::now() >= drain_deadline) return EndShutdown();
  drain_timer->expires_after(kDrainPoll);
  drain_timer->async_wait([this](beast::error_code ec) {
    if (!ec) WaitForDrain();
  });
}

void Server::Impl::EndShutdown() {
  if (ending) return;
  ending = true;
  drain_timer->cancel();
  clock->Stop();
  if (const size_t live = Live(); live > 0) {
    Log(fmt::format("stopping: the grace is over; {} live request(s) end with a 'shutdown' error", live));
    for (auto& p : ports) p->EndLive();
  }
  // The last events and responses get a moment to leave before the connections close.
  drain_timer->expires_after(kFinalFlush);
  drain_timer->async_wait([this](beast::error_code) {
    for (auto& p : ports) p->Stop();
    shared.io.stop();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

namespace {

// The fleet the ports serve: the plan's replicas (or `--replicas` of them, cycling
// through its pools when it has only mixed ones), without what a live server has no
// clock or owner for: timed invalidations, scripted losses, the simulator's autoscaler
// (the emulated fleet is its ports; a real autoscaler scales it).
Expected<FleetSetup> ServedSetup(const FleetPlan& plan, const ServeOptions& options) {
  FleetSetup s = plan.Setup();
  const bool pools = std::any_of(s.replicas.begin(), s.replicas.end(),
                                 [](const ReplicaSetup& r) { return r.role != PoolRole::kMixed; });
  if (options.replicas) {
    if (*options.replicas < 1 || *options.replicas > 1024) return UsageError("--replicas: expected 1..1024");
    if (pools) {
      return UsageError("--replicas: this scenario has prefill/decode pools; each pool's count is its "
                        "deployment.pools[].replicas");
    }
    std::vector<ReplicaSetup> cycled;
    for (int64_t i = 0; i < *options.replicas; ++i) cycled.push_back(s.replicas[static_cast<size_t>(i) % s.replicas.size()]);
    s.replicas = std::move(cycled);
  }
  if (s.replicas.size() > 1024) return UsageError("serve: at most 1024 replicas (one port each)");
  s.invalidations.clear();
  s.replica_losses.clear();
  s.autoscaling.reset();
  if (options.max_waiting) {
    for (ReplicaSetup& r : s.replicas) r.engine.scheduler.max_waiting = *options.max_waiting;
  }
  return s;
}

}  // namespace

Expected<std::unique_ptr<Server>> Server::Create(const FleetPlan& plan, const ServeOptions& options) {
  if (!(options.speed >= kMinSpeed && options.speed <= kMaxSpeed)) {
    return UsageError(fmt::format("--speed: expected between {:g} and {:g} simulated seconds per wall second, got {:g}",
                                  kMinSpeed, kMaxSpeed, options.speed));
  }
  if (options.port < 0 || options.port > 65535) return UsageError("--port: expected 0..65535");
  if (options.max_connections < 1) return UsageError("--max-connections: expected at least 1");
  for (const auto& [flag, d] : {std::pair{"--idle-timeout", options.idle_timeout},
                                std::pair{"--header-timeout", options.header_timeout}}) {
    if (d < Ms(1)) return UsageError(fmt::format("{}: expected at least 1ms", flag));
  }
  if (options.shutdown_grace < Duration()) return UsageError("--shutdown-grace: expected a duration >= 0");
  FP_ASSIGN_OR_RETURN(FleetSetup setup, ServedSetup(plan, options));
  const auto n = static_cast<int64_t>(setup.replicas.size());
  if (options.port != 0 && options.port + n - 1 > 65535) return UsageError("--port: the replicas' ports run past 65535");
  auto impl = std::make_unique<Impl>();
  Shared& sh = impl->shared;
  sh.options = options;
  sh.model = options.served_model_name.empty() ? plan.primary_pool().fit.memory.model.name : options.served_model_name;
  sh.max_model_len = plan.primary_pool().fit.context;
  sh.classes = plan.workload.classes;
  sh.seed = plan.seed;
  sh.faults = plan.serve_faults;
  boost::system::error_code ec;
  // localhost is the loopback this server binds by default; no name is looked up.
  const auto address = net::ip::make_address(options.host == "localhost" ? "127.0.0.1" : options.host, ec);
  if (ec) {
    return UsageError(fmt::format("--host: '{}' is not an IP address (such as 127.0.0.1, ::1 or 0.0.0.0) or "
                                  "localhost",
                                  options.host));
  }
  impl->clock = std::make_unique<EngineClock>(sh);
  FP_RETURN_IF_ERROR(impl->clock->Init(setup));
  for (int64_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    auto port = std::make_unique<Port>(sh, *impl->clock, id, setup.replicas[static_cast<size_t>(i)]);
    const auto number = static_cast<uint16_t>(options.port == 0 ? 0 : options.port + i);
    FP_RETURN_IF_ERROR(port->Listen(tcp::endpoint(address, number)));
    impl->clock->Attach(id, port.get());
    impl->numbers.push_back(port->port());
    impl->roles.push_back(setup.replicas[static_cast<size_t>(i)].role);
    impl->ports.push_back(std::move(port));
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

std::vector<uint16_t> Server::ports() const { return impl_->numbers; }
std::vector<PoolRole> Server::roles() const { return impl_->roles; }

Status Server::Run(bool handle_signals, std::function<void(const std::string&)> log) {
  Shared& sh = impl_->shared;
  impl_->log = std::move(log);
  impl_->drain_timer = std::make_unique<net::steady_timer>(sh.io);
  impl_->clock->Start();
  for (auto& p : impl_->ports) p->Start();
  net::signal_set signals(sh.io);
  // Each signal is a Stop: the first drains, a second ends the grace at once.
  std::function<void(beast::error_code, int)> on_signal = [&](beast::error_code ec, int) {
    if (ec) return;
    Stop();
    signals.async_wait(on_signal);
  };
  if (handle_signals) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    signals.async_wait(on_signal);
  }
  net::steady_timer deadline(sh.io);
  if (sh.options.exit_after) {
    deadline.expires_after(std::chrono::nanoseconds(sh.options.exit_after->ns()));
    deadline.async_wait([this](beast::error_code ec) {
      if (!ec) Stop();
    });
  }
  sh.io.run();
  return sh.failure;
}

void Server::Stop() {
  net::post(impl_->shared.io, [this] { impl_->BeginShutdown(); });
}

std::string ReplicaUrl(std::string_view host, uint16_t port) {
  return host.find(':') != std::string_view::npos ? fmt::format("http://[{}]:{}", host, port)
                                                  : fmt::format("http://{}:{}", host, port);
}

}  // namespace fleetplan::serve
