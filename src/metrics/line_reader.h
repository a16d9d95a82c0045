// LineReader: a file read line by line in large chunks, with a running SHA-256 of its
// bytes. Internal to the metrics module (the JSONL record readers).
// Thread model: single-threaded; owns its FILE.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/status.h"

namespace fleetplan::metrics_detail {

class LineReader {
 public:
  // A missing or unreadable file is an InvalidInput naming it.
  static Expected<std::unique_ptr<LineReader>> Open(const std::string& path);

  // The longest line read (docs/limits.md): a longer one stops the read with a located
  // error instead of being buffered whole.
  static constexpr size_t kMaxLineBytes = size_t{16} << 20;

  // A UTF-8 byte order mark at the start of the file (some Windows tools write one).
  static constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

  // The next line without its "\n" (or "\r\n"), and line 1 without a byte order mark; false at the end of the file or on a
  // read error (see status()). The view is valid until the next call.
  bool Next(std::string_view* line);
  int64_t line_number() const { return line_number_; }
  // The last line returned had no "\n" after it (the file ends mid-line).
  bool last_line_unterminated() const { return unterminated_; }
  const Status& status() const { return status_; }
  // The digest of every byte read. REQUIRES: Next returned false with an ok status.
  std::string FinishDigest() { return digest_.FinishDigest(); }

 private:
  LineReader() = default;
  bool Refill();
  void SkipBom(std::string_view* line) const;
  bool TooLong();  // sets the error for the line after line_number_; returns false

  // Reads start at kFirstChunkBytes and double up to kChunkBytes: a small file costs a
  // small buffer (not a zeroed MiB), a large one is read in 1 MiB reads (few syscalls).
  static constexpr size_t kFirstChunkBytes = size_t{16} << 10;
  static constexpr size_t kChunkBytes = size_t{1} << 20;

  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first unread byte in buffer_
  size_t end_ = 0;    // one past the last valid byte
  bool eof_ = false;
  bool read_once_ = false;  // a read has returned bytes
  bool unterminated_ = false;
  int64_t line_number_ = 0;
  Sha256Stream digest_;
  Status status_;
};

}  // namespace fleetplan::metrics_detail
