// libFuzzer target: the emulator's request reader (serve/openai.h ParseApiRequest, both
// endpoints) and tokenizer on arbitrary bytes.
// Checks: a failure is a 400 with a non-empty message whose error body is valid JSON in
// OpenAI's shape; a success has a non-empty prompt, max_tokens >= 1 when set, non-empty
// stop strings within the limits, and renders into valid JSON bodies and events; the
// tokenizer's token ends are increasing and cover the text exactly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/core/json.h"
#include "fleetplan/serve/openai.h"
#include "fleetplan/serve/tokenizer.h"
#include "fuzz_check.h"

namespace fleetplan {
namespace {

constexpr const char* kTarget = "openai_request_fuzz";

void CheckTokenizer(std::string_view text) {
  const serve::Tokenized t = serve::Tokenize(text);
  fuzz::Require(t.ids.size() == t.ends.size(), kTarget, "ids and ends differ in length", text);
  uint32_t prev = 0;
  for (const uint32_t e : t.ends) {
    fuzz::Require(e > prev, kTarget, "token ends do not increase", text);
    prev = e;
  }
  fuzz::Require(prev == text.size(), kTarget, "tokens do not cover the text", text);
}

void CheckOne(serve::Endpoint endpoint, std::string_view body) {
  const serve::ParseResult r = serve::ParseApiRequest(endpoint, body);
  if (!r.request) {
    fuzz::Require(r.error.status == 400, kTarget, "a parse failure is not a 400", r.error.message);
    fuzz::Require(!r.error.message.empty(), kTarget, "empty error message", "");
    const std::string error_body = serve::ErrorBody(r.error);
    const Json e = Json::parse(error_body, nullptr, false);
    fuzz::Require(!e.is_discarded() && e["error"].is_object() && e["error"].contains("param") &&
                      e["error"].contains("code") && e["error"]["message"].is_string(),
                  kTarget, "the error body is not OpenAI's shape", error_body);
    return;
  }
  const serve::ApiRequest& q = *r.request;
  fuzz::Require(!q.prompt_text.empty() || !q.prompt_ids.empty(), kTarget, "empty prompt accepted", body);
  fuzz::Require(!q.max_tokens || *q.max_tokens >= 1, kTarget, "max_tokens < 1 accepted", body);
  fuzz::Require(q.stop.size() <= serve::kMaxStopStrings, kTarget, "too many stop strings", body);
  for (const std::string& s : q.stop) {
    fuzz::Require(!s.empty() && s.size() <= serve::kMaxStopBytes, kTarget, "bad stop string accepted", body);
  }
  for (const int64_t id : q.prompt_ids) fuzz::Require(id >= 0, kTarget, "negative token id", body);
  CheckTokenizer(q.prompt_text);
  // The parsed texts are valid UTF-8 (nlohmann checks strings), so renderings are valid JSON.
  const serve::ResponseHead head{"cmpl-x", 1, q.model};
  const Json whole = Json::parse(serve::CompleteBody(endpoint, head, q.prompt_text, "stop", q.stop.empty() ? "" : q.stop[0],
                                                     serve::Usage{1, 1}),
                                 nullptr, false);
  fuzz::Require(!whole.is_discarded(), kTarget, "a body is not valid JSON", body);
  std::string ev;
  serve::AppendTokenEvent(ev, endpoint, head, q.prompt_text, "", "");
  fuzz::Require(!Json::parse(ev.substr(6, ev.size() - 8), nullptr, false).is_discarded(), kTarget,
                "an event is not valid JSON", body);
}

}  // namespace
}  // namespace fleetplan

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fleetplan::CheckOne(fleetplan::serve::Endpoint::kCompletions, text);
  fleetplan::CheckOne(fleetplan::serve::Endpoint::kChat, text);
  fleetplan::CheckTokenizer(text);
  return 0;
}
