// `fleetplan serve [SCENARIO]`: an OpenAI-compatible engine emulator, one port per
// replica, driven by the simulated engine in real time. Parses, binds the plan, calls
// serve/server.h.
#include <fstream>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "fleetplan/core/units_parse.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/fleet/scenario.h"
#include "fleetplan/serve/server.h"

namespace fleetplan::cli {
namespace {

struct ServeFlags {
  std::string scenario;
  serve::ServeOptions options;
  int64_t replicas = 0;
  int64_t max_waiting = -1;
  std::string slow_client_timeout;
  std::string idempotency_window;
  std::string idle_timeout;
  std::string header_timeout;
  std::string shutdown_grace;
  std::string exit_after;
  std::string ports_file;
};

Expected<Duration> FlagDuration(std::string_view flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return UsageError(fmt::format("{}: {}", flag, d.status().message()));
  if (*d <= Duration()) return UsageError(fmt::format("{}: expected a duration > 0, got '{}'", flag, text));
  return *d;
}

Status RunServe(ServeFlags f, std::ostream& out, std::ostream& err) {
  FP_ASSIGN_OR_RETURN(Scenario scenario, f.scenario.empty() ? LoadAtlasScenario() : LoadScenario(f.scenario));
  FP_ASSIGN_OR_RETURN(FleetPlan plan, Bind(scenario));
  if (f.replicas > 0) f.options.replicas = f.replicas;
  if (f.max_waiting >= 0) f.options.max_waiting = f.max_waiting;
  if (!f.slow_client_timeout.empty()) {
    FP_ASSIGN_OR_RETURN(f.options.slow_client_timeout, FlagDuration("--slow-client-timeout", f.slow_client_timeout));
  }
  if (!f.idempotency_window.empty()) {
    FP_ASSIGN_OR_RETURN(f.options.idempotency_window, FlagDuration("--idempotency-window", f.idempotency_window));
  }
  if (!f.idle_timeout.empty()) {
    FP_ASSIGN_OR_RETURN(f.options.idle_timeout, FlagDuration("--idle-timeout", f.idle_timeout));
  }
  if (!f.header_timeout.empty()) {
    FP_ASSIGN_OR_RETURN(f.options.header_timeout, FlagDuration("--header-timeout", f.header_timeout));
  }
  if (!f.shutdown_grace.empty()) {
    auto d = ParseDuration(f.shutdown_grace);
    if (!d.ok()) return UsageError(fmt::format("--shutdown-grace: {}", d.status().message()));
    f.options.shutdown_grace = *d;
  }
  if (!f.exit_after.empty()) {
    FP_ASSIGN_OR_RETURN(Duration d, FlagDuration("--exit-after", f.exit_after));
    f.options.exit_after = d;
  }
  FP_ASSIGN_OR_RETURN(auto server, serve::Server::Create(plan, f.options));
  const auto ports = server->ports();
  const auto roles = server->roles();
  for (size_t i = 0; i < ports.size(); ++i) {
    err << fmt::format("fleetplan serve: replica {} ({}) on {}\n", i, PoolRoleName(roles[i]),
                       serve::ReplicaUrl(f.options.host, ports[i]));
  }
  err << fmt::format("fleetplan serve: model {}, speed {}x; Ctrl-C stops\n",
                     f.options.served_model_name.empty() ? plan.primary_pool().fit.memory.model.name
                                                         : f.options.served_model_name,
                     f.options.speed)
      << std::flush;
  if (!f.ports_file.empty()) {
    const std::string tmp = f.ports_file + ".tmp";
    {
      std::ofstream pf(tmp);
      for (const uint16_t p : ports) pf << p << "\n";
      if (!pf) return InvalidInput(fmt::format("--ports-file: cannot write '{}'", f.ports_file));
    }
    if (std::rename(tmp.c_str(), f.ports_file.c_str()) != 0) {
      return InvalidInput(fmt::format("--ports-file: cannot write '{}'", f.ports_file));
    }
  }
  (void)out;
  return server->Run(/*handle_signals=*/true,
                     [&err](const std::string& line) { err << "fleetplan serve: " << line << "\n" << std::flush; });
}

}  // namespace

void RegisterServeVerb(CLI::App& app, VerbAction& action) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve an OpenAI-compatible API (vLLM-style) backed by the simulated engine in real time: every\n"
      "replica of the scenario's deployment listens on its own port (--port, --port + 1, ...).\n"
      "With no SCENARIO, serves the built-in Atlas scenario.");
  sub->add_option("scenario", flags->scenario, "Scenario YAML file (format: docs/scenario.md)");
  sub->add_option("--host", flags->options.host,
                  "Address to bind: an IP address (127.0.0.1, ::1, 0.0.0.0) or localhost (default 127.0.0.1: loopback only)");
  sub->add_option("--port", flags->options.port, "First replica's port (default 8000; 0: ephemeral ports)");
  sub->add_option("--replicas", flags->replicas, "Replicas to serve (default: the scenario's; mixed pools only: prefill/decode pools keep their counts)")->check(CLI::Range(1, 1024));
  sub->add_option("--speed", flags->options.speed,
                  fmt::format("Simulated seconds per wall second, {:g} to {:g} (default 1)", serve::kMinSpeed,
                              serve::kMaxSpeed));
  sub->add_option("--served-model-name", flags->options.served_model_name, "Model name clients use (default: the scenario's model)");
  sub->add_option("--max-waiting", flags->max_waiting, "Waiting-queue bound per replica (0: unbounded; default: the scenario's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  sub->add_option("--max-body", flags->options.max_body_bytes, "Largest request body in bytes (default 1 MiB; larger: 413)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 30));
  sub->add_option("--client-buffer", flags->options.client_buffer_bytes,
                  "Unsent bytes per stream before it is paused (default 65536)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 30));
  sub->add_option("--slow-client-timeout", flags->slow_client_timeout,
                  "How long a stream may stay paused before it is cancelled (default 10s)");
  sub->add_option("--idempotency-window", flags->idempotency_window,
                  "How long a completed X-Request-Id response is replayed (default 300s)");
  sub->add_option("--retry-after", flags->options.retry_after_seconds, "Retry-After seconds of a 503 (default 1)")
      ->check(CLI::Range(0, 86400));
  sub->add_option("--max-loras", flags->options.max_loras, "LoRA adapters loaded at once per replica (default 8)")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_flag("--echo", flags->options.echo,
               "Echo mode: answers repeat the prompt's tokens (chat: the last message's) instead of filler words");
  sub->add_option("--idle-timeout", flags->idle_timeout,
                  "Close a connection that starts no request within this (default 5s, as vLLM's keep-alive)");
  sub->add_option("--header-timeout", flags->header_timeout,
                  "A started request must arrive whole within this, else 408 (default 10s)");
  sub->add_option("--max-connections", flags->options.max_connections,
                  "Open connections, all ports; one more gets 503 (default 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--shutdown-grace", flags->shutdown_grace,
                  "On Ctrl-C or SIGTERM, live requests may finish within this; the rest end with an error (default "
                  "5s; a second signal stops at once)");
  sub->add_option("--exit-after", flags->exit_after, "Stop by itself after this wall time (tests, benchmarks)");
  sub->add_option("--ports-file", flags->ports_file, "Write the bound ports, one per line, once listening");
  sub->footer(
      "Endpoints (docs/serve.md): POST /v1/completions, POST /v1/chat/completions (stream or not),\n"
      "GET /v1/models, GET /health, GET /metrics (vLLM names), POST /v1/load_lora_adapter,\n"
      "POST /v1/unload_lora_adapter, POST /v1/requests/{id}/cancel.\n"
      "Prefill/decode pools (deployment.pools): every replica gets a port, in pool order; a request at a\n"
      "decode port prefills on the prefill pool and its KV moves over the link (faults.kv_transfer apply);\n"
      "one at a prefill port runs whole there. /metrics has fleetplan:replica_info{role=...}.\n"
      "Exit codes: 0 stopped (Ctrl-C, SIGTERM, --exit-after), 2 usage, 3 invalid scenario or port, 70 internal.\n"
      "Examples:\n"
      "  fleetplan serve --port 8000\n"
      "  fleetplan serve atlas.yaml --replicas 4 --speed 2\n"
      "  curl -N localhost:8000/v1/completions -d '{\"model\":\"atlas-70b\",\"prompt\":\"hi\",\"max_tokens\":8,\"stream\":true}'");
  sub->callback([flags, &action] {
    action = [flags](std::ostream& out, std::ostream& err) { return RunServe(*flags, out, err); };
  });
}

}  // namespace fleetplan::cli
