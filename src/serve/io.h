// The state every part of the server shares on its one I/O thread: the Asio context, the
// options, the served model and the plan's figures the ports read (`Shared`), and the
// names the serve files use for Beast, Asio and the wall clock.
//
// Invariants: one `Shared` per Server, created before any port, connection or clock and
// destroyed after them; `connections` counts the open connections of every port (each
// Connection adds itself on construction and removes itself on destruction, which is why
// it is declared before `io`: a connection destroyed with io's pending handlers still
// counts itself out). `draining` only goes from false to true.
// Thread model: the I/O thread only (Server::Stop posts to it).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/fleet/fleet_plan.h"
#include "fleetplan/serve/server.h"

namespace fleetplan::serve::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

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

}  // namespace fleetplan::serve::internal
