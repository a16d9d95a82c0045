// Server (server.h): the ports and the engine clock put together on one I/O thread, the
// fleet they serve (the plan's, less what a live server has no clock for), the options'
// checks, and the graceful shutdown (drain, grace, end what is left, a last flush).
//
// The rest of the server, by concern (each file's header says what it owns):
//   io.h                     the shared state of the I/O thread
//   engine_clock.h/.cc       the fleet kernel stepped in real time
//   connection.h/.cc         HTTP/1.1 on Beast: reading, routing, writing, disconnects
//   port.h/.cc               one replica's port: accepting, sweeps, cancellation, shutdown
//   completion.cc            a completion request into the engine
//   streaming.cc             tokens and outcomes back to the client
//   idempotency.h/.cc        X-Request-Id: live keys and recorded responses
//   adapters.cc              /v1/models and LoRA adapters
//   replica_metrics.h, metrics_endpoint.cc   /metrics
#include "fleetplan/serve/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>

#include "fleetplan/fleet/autoscaler.h"
#include "fleetplan/fleet/invalidations.h"
#include "fleetplan/fleet/replica_loss.h"
#include "serve/engine_clock.h"
#include "serve/io.h"
#include "serve/port.h"

namespace fleetplan::serve {
namespace {

using internal::Clock;
using internal::EngineClock;
using internal::Port;
using internal::Shared;
namespace net = internal::net;
namespace beast = internal::beast;
using tcp = internal::tcp;

constexpr auto kDrainPoll = std::chrono::milliseconds(10);    // how often a shutdown looks for live requests
constexpr auto kFinalFlush = std::chrono::milliseconds(200);  // a shutdown's last events get this long to leave

}  // namespace

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
  s.components.Erase(kInvalidationsRow);
  s.components.Erase(kReplicaLossesRow);
  s.components.Erase(kAutoscalerRow);
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
