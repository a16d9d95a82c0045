// Walks text line by line, for the readers of line-oriented files (CSV tables, counts,
// logs). Each line comes without its '\n' and without a '\r' before it, numbered from 1;
// text after the last '\n' is a last line, and a text that ends in '\n' has no empty
// line after it. Thread model: a value over a view; the text must outlive it.
#pragma once

#include <cstddef>
#include <string_view>

namespace fleetplan {

class TextLines {
 public:
  explicit TextLines(std::string_view text) : text_(text) {}

  // Sets `line` to the next line and returns true, or returns false at the end.
  bool Next(std::string_view* line) {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(pos_, end - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = end + 1;
    ++line_no_;
    return true;
  }

  // The number of the line Next returned last (0 before the first).
  int line_no() const { return line_no_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_no_ = 0;
};

}  // namespace fleetplan
