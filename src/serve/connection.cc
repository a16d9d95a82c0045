#include "serve/connection.h"

#include <fmt/format.h>

#include "serve/port.h"

namespace fleetplan::serve::internal {
namespace {

// Tunables with a why.
constexpr size_t kHeaderLimit = 16 << 10;   // request line + headers, as uvicorn's h11 default order
constexpr size_t kWatchReadBytes = 4096;    // a disconnect watch reads at most this much ahead
constexpr size_t kMaxReadAhead = 64 << 10;  // pipelined bytes kept while a request is live

}  // namespace

// One connection over options.max_connections: a 503 and the connection closed.
void Connection::Refuse() {
  keep_alive_ = false;
  const std::string message =
      fmt::format("the server holds its maximum of {} connections; retry later", shared_.options.max_connections);
  ApiError e{503, message, "server_error", "", "too_many_connections"};
  SendError(e, {{"Retry-After", fmt::to_string(shared_.options.retry_after_seconds)}});
}

// A whole response; the connection reads the next request after it (keep-alive).
void Connection::SendFull(http::status status, std::string content_type, std::string body, Headers headers) {
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

void Connection::SendError(const ApiError& e, Headers headers) {
  rep_.CountError(e.status);
  SendFull(static_cast<http::status>(e.status), "application/json", ErrorBody(e), std::move(headers));
}

// Ends this connection's live request with `e`: once its stream's headers have left, as
// an error event, [DONE] and the stream's end; before, as an HTTP error with `headers`.
void Connection::EndLiveWithError(bool stream_begun, const ApiError& e, Headers headers) {
  if (closed_) return;
  ClearLive();
  if (!stream_begun) return SendError(e, std::move(headers));
  out_ += "data: " + ErrorBody(e) + "\n\n";
  AppendDone(out_);
  EndStream();
}

// Starts a chunked text/event-stream response.
void Connection::BeginStream(Headers headers) {
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

// Drops the connection (cancelled request, slow client, shutdown).
void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  deadline_.cancel();
  beast::error_code ec;
  sock_.shutdown(tcp::socket::shutdown_both, ec);
  sock_.close(ec);
}

// The next request: a connection that starts none within the idle timeout is closed;
// one that starts one must deliver it whole within the header timeout (else 408).
void Connection::ReadRequest() {
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

void Connection::ReadWhole() {
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
void Connection::ArmDeadline(Duration d) {
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

void Connection::OnRead(beast::error_code ec) {
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

void Connection::Route(const http::request<http::string_body>& req) {
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
void Connection::Watch() {
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

void Connection::Gone() {
  if (closed_) return;
  const auto live = live_;
  Close();
  if (live) rep_.ClientGone(*live);
}

void Connection::DoWrite() {
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

void Connection::ResponseDone() {
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

}  // namespace fleetplan::serve::internal
