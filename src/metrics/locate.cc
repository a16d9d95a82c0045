#include "metrics/locate.h"

#include "metrics/json_cursor.h"

namespace fleetplan::metrics_detail {
namespace {

// Columns count code points, as core/error.h places its caret: a name with non-ASCII
// letters before the error does not push the caret to the right.
int ColumnOf(std::string_view line, size_t offset) {
  int column = 1;
  for (size_t i = 0; i < offset && i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++column;
  }
  return column;
}

}  // namespace

Status ErrorAt(const std::string& file, int64_t line, std::string_view line_text, size_t offset,
               std::string_view field, std::string_view message) {
  SourceLocation where;
  where.file = file;
  where.line = static_cast<int>(line);
  where.column = ColumnOf(line_text, offset);
  where.source_line = std::string(line_text);  // core/error.h shows a window of long lines
  return LocatedError(where, field, message);
}

Status ErrorInText(const std::string& file, std::string_view text, size_t offset,
                   std::string_view field, std::string_view message) {
  const TextPosition p = PositionOf(text, offset);
  const size_t line_offset = static_cast<size_t>(p.line_text.data() - text.data());
  return ErrorAt(file, p.line, p.line_text, offset - line_offset, field, message);
}

}  // namespace fleetplan::metrics_detail
