#include "fleetplan/serve/openai.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "fleetplan/core/limits.h"

namespace fleetplan::serve {
namespace {

ParseResult Fail(std::string message, std::string param = {}) {
  ParseResult r;
  r.error.status = 400;
  r.error.message = std::move(message);
  r.error.param = std::move(param);
  return r;
}

std::string_view TypeName(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string WrongType(std::string_view field, std::string_view expected, const Json& v) {
  return fmt::format("'{}' must be {}, got {}", field, expected, TypeName(v));
}

// An optional field: absent and null are the same.
const Json* Field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

bool IsInteger(const Json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

std::optional<std::string> ReadTokenIds(const Json& arr, std::vector<int64_t>& ids) {
  ids.reserve(arr.size());
  for (const Json& t : arr) {
    // A whole number beyond 64 bits arrives as a float: it is out of range, not a wrong type.
    if (t.is_number_float() && std::trunc(t.get<double>()) == t.get<double>() && std::abs(t.get<double>()) >= 0x1p63) {
      return "'prompt' token id out of range";
    }
    if (!t.is_number_integer() && !t.is_number_unsigned()) return "'prompt' token ids must be integers";
    if (t.is_number_unsigned() && t.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return "'prompt' token id out of range";
    }
    const int64_t id = t.get<int64_t>();
    if (id < 0) return "'prompt' token ids must be >= 0";
    ids.push_back(id);
  }
  return std::nullopt;
}

std::optional<ParseResult> ReadPrompt(const Json& body, ApiRequest& req) {
  const Json* p = Field(body, "prompt");
  if (p == nullptr) return Fail("'prompt' is required", "prompt");
  const Json* v = p;
  if (v->is_array() && v->size() == 1 && ((*v)[0].is_string() || (*v)[0].is_array())) v = &(*v)[0];
  if (v->is_string()) {
    req.prompt_text = v->get<std::string>();
  } else if (v->is_array() && !v->empty() && (*v)[0].is_number()) {
    req.prompt_is_ids = true;
    if (auto err = ReadTokenIds(*v, req.prompt_ids)) return Fail(*err, "prompt");
  } else if (v->is_array() && v->size() > 1) {
    return Fail("batched prompts are not supported: send one prompt per request", "prompt");
  } else {
    return Fail(WrongType("prompt", "a string or a list of token ids", *v), "prompt");
  }
  if (req.prompt_text.empty() && req.prompt_ids.empty()) return Fail("'prompt' must not be empty", "prompt");
  return std::nullopt;
}

std::optional<ParseResult> ReadMessages(const Json& body, ApiRequest& req) {
  const Json* m = Field(body, "messages");
  if (m == nullptr) return Fail("'messages' is required", "messages");
  if (!m->is_array() || m->empty()) return Fail("'messages' must be a non-empty array", "messages");
  std::string& text = req.prompt_text;
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& msg = (*m)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!msg.is_object()) return Fail(WrongType(where, "an object", msg), where);
    const Json* role = Field(msg, "role");
    if (role == nullptr || !role->is_string()) return Fail(fmt::format("'{}.role' must be a string", where), where + ".role");
    text += "<|";
    text += role->get_ref<const std::string&>();
    text += "|>\n";
    const Json* content = Field(msg, "content");
    const size_t content_start = text.size();
    if (content == nullptr) {
      // An assistant message with tool calls has none; it adds no text.
    } else if (content->is_string()) {
      text += content->get_ref<const std::string&>();
    } else if (content->is_array()) {
      for (size_t k = 0; k < content->size(); ++k) {
        const Json& part = (*content)[k];
        const std::string pw = fmt::format("{}.content[{}]", where, k);
        const Json* type = part.is_object() ? Field(part, "type") : nullptr;
        if (type == nullptr || !type->is_string() || *type != "text") {
          return Fail(fmt::format("'{}' must be a {{\"type\": \"text\"}} part (no other part type is emulated)", pw), pw);
        }
        const Json* t = Field(part, "text");
        if (t == nullptr || !t->is_string()) return Fail(fmt::format("'{}.text' must be a string", pw), pw + ".text");
        text += t->get_ref<const std::string&>();
      }
    } else {
      return Fail(WrongType(where + ".content", "a string or a list of parts", *content), where + ".content");
    }
    req.last_message = text.substr(content_start);
    text += "\n";
  }
  text += "<|assistant|>\n";
  return std::nullopt;
}

std::optional<ParseResult> ReadBool(const Json& body, const char* name, bool& out) {
  if (const Json* v = Field(body, name)) {
    if (!v->is_boolean()) return Fail(WrongType(name, "a boolean", *v), name);
    out = v->get<bool>();
  }
  return std::nullopt;
}

std::optional<ParseResult> ReadMaxTokens(const Json& body, const char* name, std::optional<int64_t>& out) {
  if (const Json* v = Field(body, name)) {
    if (!IsInteger(*v)) return Fail(WrongType(name, "an integer", *v), name);
    if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t{1} << 40)) {
      return Fail(fmt::format("'{}' must be at most 2^40", name), name);
    }
    const int64_t n = v->get<int64_t>();
    if (n < 1) return Fail(fmt::format("'{}' must be at least 1, got {}", name, n), name);
    out = n;
  }
  return std::nullopt;
}

std::optional<ParseResult> ReadStop(const Json& body, ApiRequest& req) {
  const Json* v = Field(body, "stop");
  if (v == nullptr) return std::nullopt;
  auto add = [&](const Json& s) -> std::optional<ParseResult> {
    if (!s.is_string()) return Fail(WrongType("stop", "a string or a list of strings", s), "stop");
    const std::string& str = s.get_ref<const std::string&>();
    if (str.size() > kMaxStopBytes) return Fail(fmt::format("a stop string is at most {} bytes", kMaxStopBytes), "stop");
    if (!str.empty()) req.stop.push_back(str);
    return std::nullopt;
  };
  if (v->is_string()) return add(*v);
  if (!v->is_array()) return Fail(WrongType("stop", "a string or a list of strings", *v), "stop");
  if (v->size() > kMaxStopStrings) return Fail(fmt::format("at most {} stop strings", kMaxStopStrings), "stop");
  for (const Json& s : *v) {
    if (auto err = add(s)) return err;
  }
  return std::nullopt;
}

// Fields whose non-default values this emulator cannot honour: refused, never dropped.
std::optional<ParseResult> RefuseUnsupported(const Json& body) {
  if (const Json* n = Field(body, "n")) {
    if (!IsInteger(*n)) return Fail(WrongType("n", "an integer", *n), "n");
    if (n->get<int64_t>() != 1) return Fail("only n = 1 is supported", "n");
  }
  if (const Json* b = Field(body, "best_of")) {
    if (!IsInteger(*b) || b->get<int64_t>() != 1) return Fail("only best_of = 1 is supported", "best_of");
  }
  if (const Json* e = Field(body, "echo")) {
    if (!e->is_boolean()) return Fail(WrongType("echo", "a boolean", *e), "echo");
    if (e->get<bool>()) return Fail("echo is not supported", "echo");
  }
  if (const Json* l = Field(body, "logprobs")) {
    if (!(l->is_boolean() && !l->get<bool>())) return Fail("logprobs are not supported", "logprobs");
  }
  if (const Json* t = Field(body, "tools")) {
    if (!(t->is_array() && t->empty())) return Fail("tools are not supported", "tools");
  }
  return std::nullopt;
}

}  // namespace

std::string ErrorBody(const ApiError& e) {
  Json err = {{"message", e.message}, {"type", e.type}};
  err["param"] = e.param.empty() ? Json(nullptr) : Json(e.param);
  err["code"] = e.code.empty() ? Json(nullptr) : Json(e.code);
  // Messages may quote the client's bytes (a route, a parse error): invalid UTF-8 is replaced.
  return Json{{"error", err}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

ParseResult ParseApiRequest(Endpoint endpoint, std::string_view text) {
  if (FindJsonNestingBeyond(text) != std::string_view::npos) return Fail(fmt::format("the body has {}", JsonNestingMessage()));
  Json body;
  try {
    body = ParseJsonText(text);
  } catch (const Json::parse_error& e) {
    return Fail(fmt::format("the body is not valid JSON: {}", e.what()));
  }
  if (!body.is_object()) return Fail(WrongType("the body", "a JSON object", body));
  ApiRequest req;
  req.endpoint = endpoint;
  const Json* model = Field(body, "model");
  if (model == nullptr) return Fail("'model' is required", "model");
  if (!model->is_string()) return Fail(WrongType("model", "a string", *model), "model");
  req.model = model->get<std::string>();
  if (auto err = endpoint == Endpoint::kChat ? ReadMessages(body, req) : ReadPrompt(body, req)) return *err;
  if (auto err = RefuseUnsupported(body)) return *err;
  if (auto err = ReadBool(body, "stream", req.stream)) return *err;
  if (const Json* so = Field(body, "stream_options")) {
    if (!so->is_object()) return Fail(WrongType("stream_options", "an object", *so), "stream_options");
    if (auto err = ReadBool(*so, "include_usage", req.include_usage)) return *err;
  }
  if (auto err = ReadMaxTokens(body, "max_tokens", req.max_tokens)) return *err;
  std::optional<int64_t> mct;
  if (auto err = ReadMaxTokens(body, "max_completion_tokens", mct)) return *err;
  if (mct) req.max_tokens = mct;
  if (auto err = ReadStop(body, req)) return *err;
  if (const Json* s = Field(body, "seed")) {
    if (!IsInteger(*s)) return Fail(WrongType("seed", "an integer", *s), "seed");
    req.seed = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(s->get<int64_t>());
  }
  if (auto err = ReadBool(body, "ignore_eos", req.ignore_eos)) return *err;
  ParseResult r;
  r.request = std::move(req);
  return r;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          out += fmt::format("\\u{:04x}", u);
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

namespace {

void AppendHead(std::string& out, std::string_view object, const ResponseHead& head) {
  out += "{\"id\":";
  AppendJsonString(out, head.id);
  out += ",\"object\":\"";
  out += object;
  out += "\",\"created\":";
  out += fmt::to_string(head.created);
  out += ",\"model\":";
  AppendJsonString(out, head.model);
}

void AppendFinish(std::string& out, std::string_view finish) {
  out += ",\"finish_reason\":";
  if (finish.empty()) {
    out += "null";
  } else {
    AppendJsonString(out, finish);
  }
}

void AppendStopReason(std::string& out, std::string_view stop_reason) {
  out += ",\"stop_reason\":";
  if (stop_reason.empty()) {
    out += "null";
  } else {
    AppendJsonString(out, stop_reason);
  }
}

void AppendUsage(std::string& out, const Usage& u) {
  out += fmt::format("\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{}}}", u.prompt_tokens,
                     u.prompt_tokens + u.completion_tokens, u.completion_tokens);
}

// The response head and the first choice's text in the endpoint's shape, up to its
// finish fields: chat puts the text inside `chat_open` (a delta or a message), completions
// in `text`.
void AppendChoiceText(std::string& out, Endpoint endpoint, std::string_view chat_object, std::string_view chat_open,
                      const ResponseHead& head, std::string_view text) {
  if (endpoint == Endpoint::kChat) {
    AppendHead(out, chat_object, head);
    out += chat_open;
    AppendJsonString(out, text);
    out += "},\"logprobs\":null";
  } else {
    AppendHead(out, "text_completion", head);
    out += ",\"choices\":[{\"index\":0,\"text\":";
    AppendJsonString(out, text);
    out += ",\"logprobs\":null";
  }
}

}  // namespace

void AppendTokenEvent(std::string& out, Endpoint endpoint, const ResponseHead& head, std::string_view text,
                      std::string_view finish, std::string_view stop_reason) {
  out += "data: ";
  AppendChoiceText(out, endpoint, "chat.completion.chunk", ",\"choices\":[{\"index\":0,\"delta\":{\"content\":", head,
                   text);
  AppendFinish(out, finish);
  AppendStopReason(out, stop_reason);
  out += "}]}\n\n";
}

void AppendRoleEvent(std::string& out, const ResponseHead& head) {
  out += "data: ";
  AppendHead(out, "chat.completion.chunk", head);
  out += ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
         "\"finish_reason\":null}]}\n\n";
}

void AppendUsageEvent(std::string& out, Endpoint endpoint, const ResponseHead& head, const Usage& usage) {
  out += "data: ";
  AppendHead(out, endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion", head);
  out += ",\"choices\":[],";
  AppendUsage(out, usage);
  out += "}\n\n";
}

void AppendDone(std::string& out) { out += "data: [DONE]\n\n"; }

std::string CompleteBody(Endpoint endpoint, const ResponseHead& head, std::string_view text,
                         std::string_view finish, std::string_view stop_reason, const Usage& usage) {
  std::string out;
  out.reserve(text.size() + 256);
  AppendChoiceText(out, endpoint, "chat.completion",
                   ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":", head, text);
  AppendFinish(out, finish);
  AppendStopReason(out, stop_reason);
  out += "}],";
  AppendUsage(out, usage);
  out += "}";
  return out;
}

}  // namespace fleetplan::serve
