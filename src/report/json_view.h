// Reading a JSON document for a page: a missing key is null, a missing number is NaN (a
// chart leaves it out, a table shows "-"), text is escaped. Shared by the pages
// (simulation_page.cc, capacity_page.cc); internal to the report layer.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/report/page.h"
#include "fleetplan/report/svg.h"

namespace fleetplan::report {

inline const Json& Get(const Json& j, std::string_view key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
inline const Json& Get(const Json& j, std::string_view a, std::string_view b) { return Get(Get(j, a), b); }

inline double Num(const Json& j) { return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN(); }
inline std::string N(const Json& j, int digits = 3) { return j.is_number() ? FormatNumber(Num(j), digits) : "-"; }
inline std::string Pct(const Json& j) { return j.is_number() ? FormatNumber(Num(j) * 100, 4) + "%" : "-"; }
inline std::string Text(const Json& j) {
  if (j.is_string()) return HtmlEscape(j.get<std::string>());
  if (j.is_null()) return "-";
  return HtmlEscape(j.dump());
}
// The same as Text, unescaped: for text that Para escapes.
inline std::string Plain(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "-";
  return j.dump();
}
inline std::vector<double> Doubles(const Json& j) {
  std::vector<double> out;
  if (!j.is_array()) return out;
  for (const Json& v : j) out.push_back(Num(v));
  return out;
}

inline std::string Charts(const std::vector<std::string>& svgs) {
  std::string out = "<div class=\"charts\">";
  for (const std::string& s : svgs) out += s;
  return out + "</div>";
}

}  // namespace fleetplan::report
