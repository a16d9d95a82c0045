// Located errors for record files. Internal to the metrics module.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fleetplan/core/error.h"
#include "fleetplan/core/status.h"

namespace fleetplan::metrics_detail {

// InvalidInput "file:line:col: field: message" (+ the line and a caret), for byte
// `offset` of `line_text`, which is line `line` of `file`. The column counts code points.
Status ErrorAt(const std::string& file, int64_t line, std::string_view line_text, size_t offset,
               std::string_view field, std::string_view message);

// The same for byte `offset` of a whole document `text`.
Status ErrorInText(const std::string& file, std::string_view text, size_t offset,
                   std::string_view field, std::string_view message);

}  // namespace fleetplan::metrics_detail
