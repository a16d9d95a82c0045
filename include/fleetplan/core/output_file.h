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

#include <functional>
#include <memory>
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

// Where text written in pieces goes: an OutputFile, a string, a stream. An error ends the
// writing (the caller returns it).
using TextSink = std::function<Status(std::string_view)>;

// An output file written in pieces, by the rule above: Open, Write any number of times,
// Commit. Until Commit a replaced file keeps its old bytes (the text goes to a temp file
// beside it); a writer destroyed before Commit, or whose Write or Commit failed, leaves
// no temp file. Writes are buffered (64 KiB), so many small pieces cost few system calls.
// Failures are InvalidInput "cannot write '<path>': <why>"; after one, the writer is spent.
class OutputFile {
 public:
  // Creates missing parent folders for a new path.
  static Expected<std::unique_ptr<OutputFile>> Open(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status Write(std::string_view text);
  // A sink that writes here (valid while this file lives).
  TextSink Sink() {
    return [this](std::string_view text) { return Write(text); };
  }
  // Flushes, syncs a replaced file and renames it over the path (Finish, then Publish).
  Status Commit();
  // The two halves of Commit, for a set of files published together (OutputFolder):
  // Finish flushes, syncs and closes the temp file; Publish renames it over the path.
  Status Finish();
  Status Publish();

 private:
  OutputFile(std::string path, OutputTarget target, int fd, std::string temp);
  Status Flush();
  Status Fail(int err);

  std::string path_;  // as given, for messages
  OutputTarget target_;
  int fd_ = -1;       // -1 for stdout
  std::string temp_;  // the temp file of a replaced path, until renamed
  std::string buffer_;
  bool finished_ = false;
  bool spent_ = false;
};

// Writes `text` to `path` by the rule above (one OutputFile: Open, Write, Commit).
Status WriteOutputFile(const std::string& path, std::string_view text);

// A fresh, empty temp file path in the system temp folder (for scratch data of an output
// that is written through or to stdout, whose own folder may not take files).
std::string ScratchPathFor(std::string_view purpose);

}  // namespace fleetplan
