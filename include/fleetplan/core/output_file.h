// How fleetplan writes an output file (report.json, a trace from `trace gen/convert`).
//
// The rule (docs/limits.md, "Output files"):
//   - "-" is standard output.
//   - A path that does not exist yet, or names a regular file, is replaced atomically: the
//     text goes to a temp file in the same folder, is fsynced and renamed over the path, so
//     a reader never sees half a file. If anything fails, the temp file is removed.
//   - Anything else — a FIFO, a character device (/dev/stdout, /dev/null, /dev/full), a
//     socket — is written through in place: it is opened and written, never replaced.
//   - A symbolic link is followed: the link stays, and its target is written by the rules
//     above (a link to a regular file gets its target replaced atomically).
//   - A directory is an error ("Is a directory").
// Thread model: pure functions of the file system; different paths may be written at once.
#pragma once

#include <string>
#include <string_view>

#include "fleetplan/core/status.h"

namespace fleetplan {

struct OutputTarget {
  enum class Kind { kStdout, kReplace, kWriteThrough };
  Kind kind = Kind::kReplace;
  std::string path;  // the file actually written: a symlink's target; "-" for stdout
};

// Classifies `path` by the rule above. A directory (or a link to one) is an InvalidInput
// "cannot write '<path>': Is a directory".
Expected<OutputTarget> ResolveOutput(const std::string& path);

// Writes `text` to `path` by the rule above; creates missing parent folders for a new
// path. Failure is an InvalidInput "cannot write '<path>': <why>" and leaves no temp file.
Status WriteOutputFile(const std::string& path, std::string_view text);

// A fresh, empty temp file path in the system temp folder (for scratch data of an output
// that is written through or to stdout, whose own folder may not take files).
std::string ScratchPathFor(std::string_view purpose);

}  // namespace fleetplan
