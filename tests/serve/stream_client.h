// A load client for the emulator: many concurrent streaming requests over loopback on
// one thread (Asio), each either read to its end or dropped after its first event.
// Used by the load tests and bench/serve_bench.cc.
#pragma once

#include <utility>

#include <boost/asio.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fleetplan::serve::testing {

struct StreamLoadResult {
  int64_t completed = 0;   // streams that reached [DONE]
  int64_t dropped = 0;     // streams closed after their first event (cancel mode)
  int64_t failed = 0;      // connect/read errors or a non-200 answer
  int64_t events = 0;      // "data: " events seen (split across reads counted once)
  double seconds = 0;
  std::string first_error;  // what the first failure was
};

class StreamLoad {
 public:
  // `body`: the JSON request (stream: true). cancel_after_first: close each stream at its
  // first event. `open_only`: leave every stream open until `hold` has passed, then close
  // (idle-stream memory).
  static StreamLoadResult Run(uint16_t port, const std::string& body, int64_t streams, bool cancel_after_first,
                              std::chrono::milliseconds hold = std::chrono::milliseconds(0),
                              const std::function<void()>& while_held = {}) {
    namespace net = boost::asio;
    using Tcp = net::ip::tcp;
    net::io_context io(1);
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    struct Conn {
      explicit Conn(net::io_context& io) : sock(io) {}
      Tcp::socket sock;
      std::vector<char> buf;  // allocated when the stream is first read
      std::string tail;  // last bytes of the previous read, to match markers across reads
      bool header_ok = false;
      bool done = false;
    };
    StreamLoadResult res;
    std::vector<std::unique_ptr<Conn>> conns;
    const Tcp::endpoint ep(net::ip::make_address("127.0.0.1"), port);
    const auto t0 = std::chrono::steady_clock::now();
    std::function<void(Conn*)> read;
    read = [&](Conn* c) {
      if (c->buf.empty()) c->buf.resize(8192);
      c->sock.async_read_some(net::buffer(c->buf), [&, c](boost::system::error_code ec, size_t n) {
        if (ec) {
          if (!c->done) {
            ++res.failed;
            if (res.first_error.empty()) res.first_error = "read: " + ec.message();
          }
          c->done = true;
          return;
        }
        std::string chunk = c->tail + std::string(c->buf.data(), n);
        if (!c->header_ok) {
          if (chunk.find("HTTP/1.1 200") == std::string::npos && chunk.size() > 12) {
            ++res.failed;
            if (res.first_error.empty()) res.first_error = "answer (" + std::to_string(chunk.size()) + " bytes, tail " + std::to_string(c->tail.size()) + "): " + chunk.substr(0, 300);
            c->done = true;
            c->sock.close();
            return;
          }
          c->header_ok = true;
        }
        for (size_t p = chunk.find("data: ", c->tail.size() >= 6 ? c->tail.size() - 5 : 0); p != std::string::npos;
             p = chunk.find("data: ", p + 1)) {
          ++res.events;
        }
        if (cancel_after_first && chunk.find("data: ") != std::string::npos) {
          ++res.dropped;
          c->done = true;
          c->sock.close();
          return;
        }
        if (chunk.find("data: [DONE]") != std::string::npos) {
          ++res.completed;
          c->done = true;
          c->sock.close();
          return;
        }
        c->tail = chunk.substr(chunk.size() > 16 ? chunk.size() - 16 : 0);
        read(c);
      });
    };
    for (int64_t i = 0; i < streams; ++i) {
      conns.push_back(std::make_unique<Conn>(io));
      Conn* c = conns.back().get();
      c->sock.async_connect(ep, [&, c](boost::system::error_code ec) {
        if (ec) {
          ++res.failed;
          if (res.first_error.empty()) res.first_error = "connect: " + ec.message();
          c->done = true;
          return;
        }
        net::async_write(c->sock, net::buffer(request), [&, c](boost::system::error_code wec, size_t) {
          if (wec) {
            ++res.failed;
            if (res.first_error.empty()) res.first_error = "write: " + wec.message();
            c->done = true;
            return;
          }
          if (hold.count() == 0) read(c);
        });
      });
    }
    if (hold.count() > 0) {
      net::steady_timer timer(io);
      timer.expires_after(hold);
      timer.async_wait([&](boost::system::error_code) {
        if (while_held) while_held();
        for (auto& c : conns) {
          boost::system::error_code ignored;
          c->sock.close(ignored);
          c->done = true;
        }
      });
      io.run();
    } else {
      io.run();
    }
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }
};

}  // namespace fleetplan::serve::testing
