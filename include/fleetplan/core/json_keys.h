// Duplicate keys in JSON text. nlohmann keeps the last of two equal keys in one object
// silently; readers of documents whose keys carry meaning (speculation rounds, signature
// files) refuse them instead, as the records readers do.
// Thread model: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fleetplan {

// The first key given twice in one object of JSON `text`, or nullopt. Text that is not
// JSON gives nullopt (the parser then reports it). REQUIRES: nesting already bounded
// (FindJsonNestingBeyond, core/limits.h).
std::optional<std::string> FindDuplicateJsonKey(std::string_view text);

}  // namespace fleetplan
