// Writes a JSON object member by member with PrettyJson's bytes, so a document too large
// to hold as one value (a sweep's points) can be written from a spool. Members must come in
// nlohmann's key order (byte order: what a std::map gives); the writer checks it.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "fleetplan/core/json.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/core/status.h"
#include "fleetplan/sweep/spool.h"

namespace fleetplan::sweep_internal {

class PrettyObjectWriter {
 public:
  explicit PrettyObjectWriter(TextSink sink) : sink_(std::move(sink)) {}

  Status Member(std::string_view key, const Json& value) {
    FP_RETURN_IF_ERROR(Key(key));
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJsonAtDepth(value, 1));
    return sink_(text);
  }

  // An array of the spool's filled slots, in slot order.
  Status SpooledArray(std::string_view key, const JsonSpool& spool) {
    FP_RETURN_IF_ERROR(Key(key));
    if (spool.size() == 0) return sink_("[]");
    FP_RETURN_IF_ERROR(sink_("["));
    bool first = true;
    for (int64_t slot = 0; slot < spool.slots(); ++slot) {
      if (!spool.Has(slot)) continue;
      FP_ASSIGN_OR_RETURN(const Json value, spool.Get(slot));
      FP_ASSIGN_OR_RETURN(const std::string text, PrettyJsonAtDepth(value, 2));
      FP_RETURN_IF_ERROR(sink_(first ? "\n    " : ",\n    "));
      FP_RETURN_IF_ERROR(sink_(text));
      first = false;
    }
    return sink_("\n  ]");
  }

  // REQUIRES: at least one member written.
  Status Close() {
    FP_ASSERT(!last_key_.empty());
    return sink_("\n}\n");
  }

 private:
  Status Key(std::string_view key) {
    FP_ASSERT(last_key_.empty() || std::string(key) > last_key_);
    const bool first = last_key_.empty();
    last_key_ = key;
    return sink_(fmt::format("{}  {}: ", first ? "{\n" : ",\n", Json(std::string(key)).dump()));
  }

  TextSink sink_;
  std::string last_key_;
};

}  // namespace fleetplan::sweep_internal
