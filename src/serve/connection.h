// One TCP connection of a port: HTTP/1.1 on Boost.Beast. It reads requests with Beast's
// parser, routes each target to its port's handler, writes whole responses or a chunked
// text/event-stream response, and watches for the client going away while a request is
// live.
//
// Invariants: at most one request is live on a connection at a time (pipelined bytes
// wait in the read buffer, up to a bound: connection.cc, kMaxReadAhead); at most one write is in
// flight, and output appended meanwhile is coalesced into the next chunk; while a
// request is live one read stays outstanding, so a disconnect cancels it at once. A
// connection that starts no request within options.idle_timeout is closed; a started
// request must arrive whole within options.header_timeout, else it is answered 408.
// Closing is idempotent and nothing is written after it.
// Thread model: the I/O thread only; the connection keeps itself alive through the
// handlers it has pending (shared_from_this).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetplan/serve/openai.h"
#include "fleetplan/workload/request.h"
#include "serve/io.h"

namespace fleetplan::serve::internal {

class Port;

using Headers = std::vector<std::pair<std::string, std::string>>;

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
  void Refuse();

  // A whole response; the connection reads the next request after it (keep-alive).
  void SendFull(http::status status, std::string content_type, std::string body, Headers headers = {});
  void SendError(const ApiError& e, Headers headers = {});
  // Ends this connection's live request with `e`: once its stream's headers have left, as
  // an error event, [DONE] and the stream's end; before, as an HTTP error with `headers`.
  void EndLiveWithError(bool stream_begun, const ApiError& e, Headers headers = {});
  // Starts a chunked text/event-stream response.
  void BeginStream(Headers headers);
  // The stream's pending output: events appended here leave with the next write.
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
  void Close();
  bool closed() const { return closed_; }

 private:
  void ReadRequest();
  void ReadWhole();
  void ArmDeadline(Duration d);
  void OnRead(beast::error_code ec);
  void Route(const http::request<http::string_body>& req);
  void Watch();
  void Gone();
  void DoWrite();
  void ResponseDone();

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

}  // namespace fleetplan::serve::internal
