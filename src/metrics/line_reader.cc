#include "metrics/line_reader.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "fleetplan/core/read_log.h"

namespace fleetplan::metrics_detail {

Expected<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  std::unique_ptr<LineReader> reader(new LineReader());
  reader->path_ = path;
  reader->file_.reset(std::fopen(path.c_str(), "rb"));
  if (!reader->file_) {
    return InvalidInput(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  NoteFileOpened(path);
  reader->buffer_.resize(kFirstChunkBytes);
  return reader;
}

bool LineReader::Refill() {
  // Keep the unread tail, then fill the rest; grow when one line fills the buffer.
  const size_t tail = end_ - begin_;
  if (begin_ > 0 && tail > 0) std::memmove(buffer_.data(), buffer_.data() + begin_, tail);
  begin_ = 0;
  end_ = tail;
  // Grow when one line fills the buffer, and after each read until reads are kChunkBytes.
  if (end_ == buffer_.size() || (read_once_ && buffer_.size() < kChunkBytes)) {
    buffer_.resize(buffer_.size() * 2);
  }
  const size_t got = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_.get());
  if (got == 0) {
    if (std::ferror(file_.get())) {
      status_ = InvalidInput(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    }
    eof_ = true;
    return false;
  }
  digest_.Update(std::string_view(buffer_.data() + end_, got));
  end_ += got;
  read_once_ = true;
  return true;
}

void LineReader::SkipBom(std::string_view* line) const {
  if (line_number_ == 1 && line->substr(0, kUtf8Bom.size()) == kUtf8Bom) line->remove_prefix(kUtf8Bom.size());
}

bool LineReader::TooLong() {
  status_ = InvalidInput(fmt::format("{}:{}: line is longer than {} MiB; is this a records file? (docs/limits.md)",
                                     path_, line_number_ + 1, kMaxLineBytes >> 20));
  return false;
}

bool LineReader::Next(std::string_view* line) {
  if (!status_.ok()) return false;
  while (true) {
    const char* base = buffer_.data();
    const void* nl = begin_ < end_ ? std::memchr(base + begin_, '\n', end_ - begin_) : nullptr;
    if (nl != nullptr) {
      const size_t at = static_cast<size_t>(static_cast<const char*>(nl) - base);
      size_t stop = at;
      if (stop > begin_ && base[stop - 1] == '\r') --stop;
      if (stop - begin_ > kMaxLineBytes) return TooLong();
      *line = std::string_view(base + begin_, stop - begin_);
      begin_ = at + 1;
      ++line_number_;
      SkipBom(line);
      return true;
    }
    if (end_ - begin_ > kMaxLineBytes + 1) return TooLong();  // no newline in more than a line's worth
    if (eof_ || !Refill()) {
      if (!status_.ok() || begin_ >= end_) return false;
      size_t stop = end_;
      if (buffer_[stop - 1] == '\r') --stop;
      if (stop - begin_ > kMaxLineBytes) return TooLong();
      *line = std::string_view(buffer_.data() + begin_, stop - begin_);
      begin_ = end_;
      ++line_number_;
      unterminated_ = true;
      SkipBom(line);
      return true;
    }
  }
}

}  // namespace fleetplan::metrics_detail
