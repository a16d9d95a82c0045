// The OpenAI wire format of the emulator: request bodies in, response bodies and
// server-sent events out. Pure functions over values; the server (server.h) owns the I/O.
//
// Requests (POST /v1/completions, /v1/chat/completions). Read: model, prompt (a string,
// a one-element list of strings, a list of token ids or a one-element list of those) or
// messages (role + content, a string or a list of {type: text, text} parts), stream,
// stream_options.include_usage, max_tokens and max_completion_tokens (the latter wins),
// stop (a string or a list of strings), seed, n (only 1), ignore_eos (vLLM's: the answer
// is exactly max_tokens long). Any other field is accepted and ignored, as vLLM does, but
// fields this emulator cannot honour when set are refused (n > 1, best_of > 1, echo,
// logprobs, tools), never silently dropped. The chat template is
//   for each message: "<|" role "|>\n" content "\n"; then "<|assistant|>\n".
//
// Errors are OpenAI's nested shape {"error": {"message", "type", "param", "code"}} with
// the HTTP status that goes with them (ApiError).
// Thread model: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"

namespace fleetplan::serve {

enum class Endpoint : int { kCompletions = 0, kChat = 1 };

struct ApiError {
  ApiError() = default;
  ApiError(int status_, std::string message_, std::string type_ = "invalid_request_error", std::string param_ = {},
           std::string code_ = {})
      : status(status_), message(std::move(message_)), type(std::move(type_)), param(std::move(param_)),
        code(std::move(code_)) {}
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
};
// {"error": {...}} as compact JSON.
std::string ErrorBody(const ApiError& e);

struct ApiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::string prompt_text;              // the templated text (chat) or the prompt string
  std::string last_message;             // chat: the last message's text content (echo mode)
  std::vector<int64_t> prompt_ids;      // set when the prompt came as token ids
  bool prompt_is_ids = false;
  bool stream = false;
  bool include_usage = false;
  std::optional<int64_t> max_tokens;    // >= 1
  std::vector<std::string> stop;        // non-empty strings
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
};

// Parses a request body. Errors: 400 with the offending field in `param`.
struct ParseResult {
  std::optional<ApiRequest> request;
  ApiError error;
};
ParseResult ParseApiRequest(Endpoint endpoint, std::string_view body);

// The stop strings longest allowed, and how many.
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopBytes = 256;

// What identifies a response: its id, creation time (unix seconds) and model name.
struct ResponseHead {
  std::string id;
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// One streamed event: "data: {json}\n\n" for the token text `text` (chat: a content
// delta) with finish_reason when `finish` is non-empty.
void AppendTokenEvent(std::string& out, Endpoint endpoint, const ResponseHead& head, std::string_view text,
                      std::string_view finish, std::string_view stop_reason);
// Chat only: the first event, the assistant role with empty content.
void AppendRoleEvent(std::string& out, const ResponseHead& head);
// The usage event (choices: []) when include_usage was asked.
void AppendUsageEvent(std::string& out, Endpoint endpoint, const ResponseHead& head, const Usage& usage);
// "data: [DONE]\n\n"
void AppendDone(std::string& out);

// The non-streamed body.
std::string CompleteBody(Endpoint endpoint, const ResponseHead& head, std::string_view text,
                         std::string_view finish, std::string_view stop_reason, const Usage& usage);

// JSON string escaping (for texts inside events).
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace fleetplan::serve
