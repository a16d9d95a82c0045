#include "workload/line_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace fleetplan::workload_internal {

LineReader::LineReader(std::unique_ptr<std::istream> in, std::string display_name)
    : in_(std::move(in)), display_name_(std::move(display_name)), buffer_(kFirstChunkBytes) {}

bool LineReader::Fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < read_bytes_) buffer_.resize(end_ + read_bytes_);
  read_bytes_ = std::min(read_bytes_ * 2, kChunkBytes);
  in_->read(buffer_.data() + end_, static_cast<std::streamsize>(buffer_.size() - end_));
  const auto got = static_cast<size_t>(in_->gcount());
  if (in_->bad()) io_error_ = true;
  if (got == 0) {
    eof_ = true;
    return false;
  }
  digest_.Update(std::string_view(buffer_.data() + end_, got));
  end_ += got;
  if (!*in_) eof_ = true;  // short read: end of input reached
  return true;
}

LineReader::Result LineReader::Next(std::string_view* line) {
  size_t scanned = begin_;  // bytes before this are known to hold no newline
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(buffer_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const auto pos = static_cast<size_t>(static_cast<const char*>(nl) - buffer_.data());
      size_t len = pos - begin_;
      if (len > 0 && start[len - 1] == '\r') --len;
      // The limit is exact: a read may bring a longer line's newline in with it.
      if (len > kMaxLineBytes) {
        ++line_number_;
        return Result::kTooLong;
      }
      *line = std::string_view(start, len);
      begin_ = pos + 1;
      ++line_number_;
      return Result::kLine;
    }
    if (end_ - begin_ > kMaxLineBytes) {
      ++line_number_;
      return Result::kTooLong;
    }
    scanned = end_ - begin_;  // relative to begin_, which Fill() moves to 0
    if (!Fill()) {
      if (io_error_) return Result::kIoError;
      if (begin_ == end_) return Result::kEnd;
      size_t len = end_ - begin_;
      const char* last = buffer_.data() + begin_;
      if (last[len - 1] == '\r') --len;
      *line = std::string_view(last, len);
      begin_ = end_;
      ++line_number_;
      return Result::kLine;
    }
    scanned += begin_;
  }
}

std::string LineReader::FinishDigest() {
  begin_ = end_;
  while (Fill()) begin_ = end_;
  return digest_.FinishDigest();
}

}  // namespace fleetplan::workload_internal
