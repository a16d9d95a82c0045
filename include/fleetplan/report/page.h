// Page: a self-contained HTML report built from a list of sections.
//
// A page is a title, a subtitle and sections; each section has an id (its anchor, and
// what the browser test looks for), a title and its HTML body (tables, inline SVG charts
// from svg.h, paragraphs). RenderPage wraps them in one HTML5 document with an inline
// stylesheet and a table of contents: no script, no font, no image or stylesheet from
// anywhere else, so the file opens offline and shows the same in every browser. A new
// kind of page (sweep, capacity, plan) is a new list of sections; the page and the chart
// pieces are shared.
//
// Deterministic: the output depends only on the sections (no date, no host, no random
// ids): the same inputs give the same bytes.
// Thread model: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"

namespace fleetplan::report {

struct Section {
  std::string id;     // [a-z0-9-]+, unique in the page
  std::string title;
  std::string html;   // the body, already escaped where it holds text
};

// One row of a page's section registry: the section's id and title and the function that
// renders its body from the page's JSON document (simulation_page.h, plan_page.h).
struct SectionRow {
  std::string_view id;
  std::string_view title;
  std::string (*build)(const Json& document);
};

struct Page {
  std::string title;
  std::string subtitle;
  std::vector<Section> sections;
};

std::string RenderPage(const Page& page);

// Escapes &, <, >, " and ' for text and attribute values.
std::string HtmlEscape(std::string_view text);
// A table: `header` cells and rows of cells (each cell already HTML). Cells whose text
// starts with a digit, a sign or a dot are right-aligned.
std::string HtmlTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
// A paragraph of escaped text.
std::string Para(std::string_view text, std::string_view css_class = "");

}  // namespace fleetplan::report
