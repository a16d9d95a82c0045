// Names that reach a terminal: a scenario's name, an evidence kind, a records class, a
// catalog entry, a LoRA adapter. fleetplan prints them in summaries and messages, so a
// character a terminal acts on rather than shows (an escape sequence, a carriage return,
// a bell, a right-to-left override) could forge an output line. Such names are refused
// where they are read, with the reader's location.
// Thread model: pure functions.
#pragma once

#include <string_view>

#include "fleetplan/core/status.h"

namespace fleetplan {

// Ok, or an InvalidInput (without a location: callers locate it at the value) whose
// message is "contains the control character U+001B at byte 3: names are printed, so
// control and bidirectional-formatting characters are refused". Refused: C0 controls
// (U+0000-U+001F), DEL (U+007F), C1 controls (U+0080-U+009F), and the bidirectional
// formatting characters U+061C, U+200E, U+200F, U+202A-U+202E and U+2066-U+2069. Bytes
// that are not well-formed UTF-8 are left to the readers' own checks.
Status CheckPrintableName(std::string_view name);

}  // namespace fleetplan
