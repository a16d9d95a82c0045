#include "fleetplan/core/printable_name.h"

#include <cstdint>

#include <fmt/format.h>

namespace fleetplan {
namespace {

bool Refused(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

Status CheckPrintableName(std::string_view name) {
  for (size_t i = 0; i < name.size();) {
    const auto b0 = static_cast<unsigned char>(name[i]);
    uint32_t cp = b0;
    size_t len = 1;
    if (b0 >= 0xC0 && b0 < 0xE0 && i + 1 < name.size()) {
      cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(name[i + 1]) & 0x3Fu);
      len = 2;
    } else if (b0 >= 0xE0 && b0 < 0xF0 && i + 2 < name.size()) {
      cp = ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(name[i + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(name[i + 2]) & 0x3Fu);
      len = 3;
    } else if (b0 >= 0x80) {
      cp = 0x110000;  // a continuation, a 4-byte sequence or ill-formed: none of the refused
      len = 1;
    }
    if (Refused(cp)) {
      return InvalidInput(fmt::format("contains the control character U+{:04X} at byte {}: names are printed, so "
                                      "control and bidirectional-formatting characters are refused",
                                      cp, i));
    }
    i += len;
  }
  return Status::Ok();
}

}  // namespace fleetplan
