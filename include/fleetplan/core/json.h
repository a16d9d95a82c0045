// Canonical JSON: the one way fleetplan writes JSON that users diff and digest.
//
// We use nlohmann::json, whose default object type is a std::map, so keys are always
// sorted (byte order). Canonical form = that ordering + no insignificant whitespace +
// numbers as nlohmann prints them (integers exactly; doubles in shortest round-trip
// form) + non-finite doubles rejected (they have no JSON form) + UTF-8 validated (strings
// and keys are written as UTF-8, not \u-escaped).
// Pretty form = the same with 2-space indent and a trailing newline, for files people read.
// Thread model: pure functions (WriteFileAtomic may run concurrently for different paths).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "fleetplan/core/status.h"

namespace fleetplan {

using Json = nlohmann::json;

// REQUIRES: no NaN or infinite numbers and no invalid UTF-8 inside `value` (checked: an
// InternalError naming the JSON pointer, e.g. "cannot write JSON: NaN has no JSON form
// (at JSON pointer '/classes/0/p99')").
Expected<std::string> CanonicalJson(const Json& value);
Expected<std::string> PrettyJson(const Json& value);
// `value` in pretty form as it appears `depth` levels inside a pretty document: every line
// after the first indented by 2 x depth more spaces, no trailing newline. A document
// written piece by piece with it has PrettyJson's bytes. REQUIRES: depth >= 0.
Expected<std::string> PrettyJsonAtDepth(const Json& value, int depth);

// Rounds a double for reports so tiny floating noise does not reach output: `digits`
// significant decimal digits (default 9), i.e. the double nearest to the decimal rounded
// half-to-even at that digit (fmt's exact formatting, then a correctly rounded parse).
// Deterministic on every platform. -0 becomes 0; NaN and infinities pass through.
// REQUIRES: 1 <= digits <= 17.
double RoundForReport(double v, int digits = 9);

// Json::parse(text), except that a number beyond a double's range (`1e999`) is a
// parse_error at its line and column like every other syntax error: nlohmann reports it
// as out_of_range.406 with no position, which readers that catch parse_error would let
// escape. Every reader that parses JSON with exceptions calls this.
Json ParseJsonText(std::string_view text);

// WriteOutputFile (core/output_file.h): "-" is stdout, a new or regular file is replaced
// atomically, anything else is written through. Failure: "cannot write '<path>': <why>".
Status WriteFileAtomic(const std::string& path, const std::string& text);
// Reads a whole file; a missing or unreadable file is an InvalidInput naming the path:
// "cannot read '<path>': No such file or directory".
Expected<std::string> ReadFile(const std::string& path);

}  // namespace fleetplan
