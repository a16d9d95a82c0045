// The files a computation read, for a decision that must be bound to every input byte
// (docs/plan.md "digest"). A ReadLog is attached to the current thread by a ReadLogScope;
// while attached, core's ReadFile records each path it read with the digest of the bytes
// it returned, and the streaming readers (traces, records) record the paths they opened.
// A thread that works for an attached thread (a sweep or capacity worker) attaches the
// same log: `ReadLogScope scope(ReadLog::Current());`.
//
// Paths are kept lexically normalised (`a/./b` and `a/c/../b` are one file) and listed
// in path order, so the log's contents do not depend on which thread read first. A path
// read twice with different bytes is a conflict: the file changed while it was read.
// Thread model: a ReadLog is shared by the threads it is attached to (a mutex guards it).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fleetplan {

class ReadLog {
 public:
  struct Entry {
    std::string path;                   // lexically normalised, as opened
    std::optional<std::string> digest;  // "sha256:..." of the bytes read; none for a stream
  };

  // Records that `path` was read whole and held `digest`.
  void NoteRead(std::string_view path, std::string digest);
  // Records that `path` was opened for streaming (its digest is taken by the caller).
  void NoteOpened(std::string_view path);

  std::vector<Entry> Entries() const;  // in path order
  // Paths read at least twice with different bytes, in path order.
  std::vector<std::string> Conflicts() const;

  // The log attached to this thread, or null.
  static ReadLog* Current();

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::optional<std::string>> files_;
  std::map<std::string, bool> conflicts_;
};

// Attaches `log` (which may be null: attaches none) to this thread for the scope's life,
// restoring what was attached before.
class ReadLogScope {
 public:
  explicit ReadLogScope(ReadLog* log);
  ~ReadLogScope();
  ReadLogScope(const ReadLogScope&) = delete;
  ReadLogScope& operator=(const ReadLogScope&) = delete;

 private:
  ReadLog* previous_;
};

// Shorthands for the readers: record into the attached log, if any.
void NoteFileRead(std::string_view path, std::string_view bytes);
void NoteFileOpened(std::string_view path);

}  // namespace fleetplan
