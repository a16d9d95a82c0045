// Server: `fleetplan serve`, an OpenAI-compatible engine emulator. Every replica of a
// bound plan is one engine of one fleet kernel (fleet/simulation.h, push API), stepped in
// real time, and listens on its own port (port, port + 1, ... in replica order, pools in
// file order), so a gateway can route among them as among vLLM pods. A request is pinned
// to the replica of the port it reached (Request::pinned_replica): the fleet's router
// never moves it. With prefill/decode pools, a request at a decode (or mixed) port is that
// replica's to decode: the fleet's pools component picks a prefill replica, computes the
// prompt there and moves the KV over the link (faults.kv_transfer apply), as
// `simulate` does; a request at a prefill port runs whole there.
//
// Time. The fleet maps wall time to simulated time from the server's start: sim = (wall -
// origin) * speed. A step of simulated cost D that starts at simulated t ends at t + D,
// that is D / speed of wall time after its simulated start; a request's arrival is the
// simulated time of the moment its HTTP request was read. Output tokens leave when the
// I/O thread handles the event; how late that is against the simulated schedule
// (wall now - wall of the event's simulated time) is exported in /metrics
// (fleetplan:token_lateness_seconds).
//
// Threads. One I/O thread runs everything: the acceptors, every connection, and the
// fleet's engine clock (a timer armed at the wall time of the simulation's next
// event). Nothing blocks it: writes are asynchronous, each connection's output buffer is
// capped (a full one pauses its stream; past the slow-client timeout the request is
// cancelled), and the engine never waits for a client.
//
// Requests (docs/serve.md): a client disconnect or POST /v1/requests/{id}/cancel cancels
// a request in whatever state it is in; a second live request with the same X-Request-Id
// gets 409; a completed one is replayed from its recorded response for the retention
// window; when the engine's waiting bound is hit the answer is 503 with Retry-After.
// Thread model: Run on one thread; Stop may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/fleet/fleet_plan.h"

namespace fleetplan::serve {

// The range of --speed: the engine clock keeps up to 1000 simulated seconds per wall
// second (a 10 ms step in 10 us of wall time; beyond that the I/O thread falls behind
// its own schedule), and both clocks stay within int64 nanoseconds for 46 days.
inline constexpr double kMinSpeed = 0.001;
inline constexpr double kMaxSpeed = 1000;

struct ServeOptions {
  std::string host = "127.0.0.1";        // an IP address, or localhost (127.0.0.1)
  int port = 8000;                       // replica i listens on port + i; 0: each takes an ephemeral port
  std::optional<int64_t> replicas;       // overrides the plan's count (mixed pools only)
  double speed = 1.0;                    // simulated seconds per wall second
  std::optional<int64_t> max_waiting;    // overrides engine.scheduler.max_waiting (0: unbounded)
  std::string served_model_name;         // default: the plan's model name
  int64_t max_body_bytes = 1 << 20;      // larger bodies get 413
  int64_t client_buffer_bytes = 64 << 10;  // a stream's unsent output beyond this pauses it
  Duration slow_client_timeout = Sec(10);  // wall time a stream may stay paused before it is cancelled
  Duration idempotency_window = Sec(300);  // wall time a completed request's response is kept
  int64_t idempotency_entries = 10'000;    // most recorded responses per replica (oldest dropped)
  int64_t idempotency_max_body = 1 << 20;  // responses larger than this are not recorded
  int64_t retry_after_seconds = 1;         // Retry-After of a 503
  int64_t max_loras = 8;                   // adapters loaded at once per replica
  Duration idle_timeout = Sec(5);          // a connection that starts no request is closed after this (as vLLM)
  Duration header_timeout = Sec(10);       // a started request must be read whole within this, else 408
  int64_t max_connections = 10000;         // open connections, all ports; one more is answered 503 and closed
  Duration shutdown_grace = Sec(5);        // on Stop, live requests may finish this long; the rest end with an error
  std::optional<Duration> exit_after;      // wall time after which Run returns by itself
  bool echo = false;                       // answers repeat the prompt's tokens (tokenizer.h, EchoText)
};

// The base URL of a replica listening on host:port, as a client writes it: an IPv6
// address in brackets (http://[::1]:8000).
std::string ReplicaUrl(std::string_view host, uint16_t port);

class Server {
 public:
  // Binds every replica's port. The scenario's timed cache invalidations, replica losses
  // and autoscaler are left out: the emulated fleet is its ports. Errors (kUsage): a bad
  // option, `replicas` with prefill/decode pools (their counts are the scenario's);
  // (kInvalidInput) a port that cannot be bound.
  static Expected<std::unique_ptr<Server>> Create(const FleetPlan& plan, const ServeOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound ports and their replicas' pool roles, in replica order.
  std::vector<uint16_t> ports() const;
  std::vector<PoolRole> roles() const;
  // Serves on the calling thread until Stop, SIGINT/SIGTERM (with handle_signals) or
  // exit_after. Returns an internal error if a replica's simulation failed. `log`, when
  // set, gets a line at each stage of a shutdown.
  Status Run(bool handle_signals = false, std::function<void(const std::string&)> log = {});
  // Shuts down gracefully: stops accepting, lets live requests finish for
  // options.shutdown_grace, ends the rest (a stream with an error event and [DONE], a
  // waiting request with 503 `shutdown`), then Run returns. A second Stop during the
  // grace ends it at once. Thread-safe.
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fleetplan::serve
