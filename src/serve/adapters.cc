// Port (port.h): the served models. The base model answers under its served name; LoRA
// adapters are loaded and unloaded by name (POST /v1/load_lora_adapter,
// /v1/unload_lora_adapter, vLLM's bodies and messages), at most --max-loras per replica,
// and listed by GET /v1/models. An adapter's id is the fleet's for its name
// (EngineClock::AdapterIdOf), so the same name is the same adapter on every replica.
#include <fmt/format.h>

#include <ctime>

#include "fleetplan/core/limits.h"
#include "fleetplan/core/printable_name.h"
#include "serve/connection.h"
#include "serve/port.h"

namespace fleetplan::serve::internal {

std::optional<AdapterId> Port::ResolveModel(const std::string& name) const {
  if (name == shared_.model) return kNoAdapter;
  if (auto it = lora_ids_.find(name); it != lora_ids_.end()) return it->second;
  return std::nullopt;
}

void Port::LoadLora(const std::shared_ptr<Connection>& c, std::string_view body, bool load) {
  if (FindJsonNestingBeyond(body) != std::string_view::npos) {
    return c->SendError(ApiError{400, fmt::format("the body has {}", JsonNestingMessage())});
  }
  Json j;
  try {
    j = ParseJsonText(body);
  } catch (const Json::parse_error& e) {
    return c->SendError(ApiError{400, fmt::format("the body is not valid JSON: {}", e.what())});
  }
  if (!j.is_object() || !j.contains("lora_name") || !j["lora_name"].is_string() || j["lora_name"].get<std::string>().empty()) {
    return c->SendError(ApiError{400, "'lora_name' must be a non-empty string", "invalid_request_error", "lora_name"});
  }
  const std::string name = j["lora_name"].get<std::string>();
  if (Status printable = CheckPrintableName(name); !printable.ok()) {
    return c->SendError(ApiError{400, fmt::format("'lora_name' {}", printable.message()), "invalid_request_error",
                                 "lora_name"});
  }
  if (load) {
    if (!j.contains("lora_path") || !j["lora_path"].is_string()) {
      return c->SendError(ApiError{400, "'lora_path' must be a string", "invalid_request_error", "lora_path"});
    }
    if (name == shared_.model || loras_.count(name) != 0) {
      return c->SendError(ApiError{400, fmt::format("The lora adapter '{}' has already been loaded.", name),
                                   "invalid_request_error", "lora_name"});
    }
    if (static_cast<int64_t>(loras_.size()) >= shared_.options.max_loras) {
      return c->SendError(ApiError{400, fmt::format("at most {} LoRA adapters may be loaded (--max-loras)", shared_.options.max_loras),
                                   "invalid_request_error", "lora_name"});
    }
    loras_[name] = j["lora_path"].get<std::string>();
    lora_ids_[name] = clock_.AdapterIdOf(name);
    return c->SendFull(http::status::ok, "text/plain", fmt::format("Success: LoRA adapter '{}' added successfully.", name));
  }
  if (loras_.erase(name) == 0) {
    ApiError e{404, fmt::format("The lora adapter '{}' cannot be found.", name), "not_found_error", "lora_name"};
    return c->SendError(e);
  }
  lora_ids_.erase(name);
  c->SendFull(http::status::ok, "text/plain", fmt::format("Success: LoRA adapter '{}' removed successfully.", name));
}

std::string Port::ModelsBody() const {
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  Json data = Json::array();
  data.push_back({{"id", shared_.model}, {"object", "model"}, {"created", created}, {"owned_by", "fleetplan"},
                  {"root", shared_.model}, {"parent", nullptr}, {"max_model_len", shared_.max_model_len}});
  for (const auto& [name, path] : loras_) {
    data.push_back({{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "fleetplan"}, {"root", path},
                    {"parent", shared_.model}, {"max_model_len", shared_.max_model_len}});
  }
  return Json{{"object", "list"}, {"data", data}}.dump();
}

}  // namespace fleetplan::serve::internal
