// LineReader: reads a text stream line by line in large chunks, hashing every byte.
//
// Lines are returned without their terminator ("\n", or "\r\n" read as "\n"); a last
// line without a newline is still a line. The SHA-256 digest covers the exact bytes of
// the stream, including what is never returned as a line when FinishDigest() drains
// the rest. Views returned by Next() stay valid until the next call.
// Thread model: single-threaded state.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/status.h"

namespace fleetplan::workload_internal {

class LineReader {
 public:
  // Longest accepted line: far above any real trace row (a Mooncake row with 250
  // hash ids is ~2 KB), small enough that a binary file cannot exhaust memory.
  static constexpr size_t kMaxLineBytes = size_t{16} << 20;

  LineReader(std::unique_ptr<std::istream> in, std::string display_name);

  enum class Result { kLine, kEnd, kTooLong, kIoError };
  Result Next(std::string_view* line);

  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& display_name() const { return display_name_; }
  // Reads and hashes whatever is left, then returns "sha256:<hex>". Call once.
  std::string FinishDigest();

 private:
  bool Fill();  // reads more bytes behind the unread ones; false at end of input

  // Chunk size of reads: large enough to amortise stream calls, small enough to stay
  // in cache. Reads start at kFirstChunkBytes and double up to it, so a small stream
  // costs a small buffer instead of a zeroed MiB.
  static constexpr size_t kFirstChunkBytes = size_t{16} << 10;
  static constexpr size_t kChunkBytes = size_t{1} << 20;

  std::unique_ptr<std::istream> in_;
  std::string display_name_;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first unread byte
  size_t end_ = 0;    // one past the last byte read
  size_t read_bytes_ = kFirstChunkBytes;  // size of the next read
  bool eof_ = false;
  bool io_error_ = false;
  int64_t line_number_ = 0;
  Sha256Stream digest_;
};

}  // namespace fleetplan::workload_internal
