#include "fleetplan/report/page.h"

#include <fmt/format.h>

namespace fleetplan::report {
namespace {

// The whole stylesheet: system fonts only, print-friendly.
constexpr std::string_view kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#ffffff;padding:18px 28px}
header h1{margin:0;font-size:22px}
header p{margin:6px 0 0;color:#c9d1e0;font-size:14px}
nav{padding:10px 28px;background:#e8ebf0;font-size:13px}
nav a{margin-right:14px;color:#1d2330}
main{padding:8px 28px 40px}
section{background:#ffffff;border:1px solid #d9dde5;border-radius:6px;margin:16px 0;padding:12px 18px}
section h2{font-size:17px;margin:4px 0 10px}
h3{font-size:14px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
th,td{border-bottom:1px solid #e3e6ec;padding:4px 10px;text-align:left}
th{background:#f0f2f5}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:10px}
svg.chart{border:1px solid #e3e6ec;background:#ffffff}
svg .ct{font-size:13px;font-weight:600;fill:#1d2330}
svg .tl{font-size:10px;fill:#4a5364}
svg .al{font-size:11px;fill:#1d2330}
svg .ml{font-size:10px}
svg .grid{stroke:#eceef2;stroke-width:1}
svg .axes{fill:none;stroke:#9aa3b2;stroke-width:1}
.verdict{font-size:15px;padding:8px 12px;border-radius:4px;background:#eef4fb;border-left:4px solid #0072b2}
.bad{border-left-color:#d55e00;background:#fbf0ea}
.good{border-left-color:#009e73;background:#eaf7f2}
.warn{border-left-color:#e69f00;background:#fdf5e6}
.release{font-size:34px;font-weight:700;letter-spacing:1px;padding:10px 16px;margin:4px 0 10px}
.badge{display:inline-block;white-space:nowrap;min-width:36px;text-align:center;padding:1px 6px;border-radius:3px;font-size:12px;font-weight:600;color:#ffffff;background:#7f7f7f}
.badge.pass{background:#007a5a}
.badge.fail{background:#c0450a}
.badge.hold{background:#9a6400}
tr.at td{background:#fdf0c8;font-weight:600}
.muted{color:#5b6474;font-size:13px}
ul.notes{font-size:13px;columns:2}
code{font-size:12px;word-break:break-all}
)";

bool LooksNumeric(const std::string& cell) {
  if (cell.empty()) return false;
  const char c = cell.front();
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string HtmlTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table><thead><tr>";
  for (const std::string& h : header) out += "<th>" + h + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += LooksNumeric(cell) ? "<td class=\"n\">" + cell + "</td>" : "<td>" + cell + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

std::string Para(std::string_view text, std::string_view css_class) {
  if (css_class.empty()) return "<p>" + HtmlEscape(text) + "</p>";
  return fmt::format("<p class=\"{}\">{}</p>", css_class, HtmlEscape(text));
}

std::string RenderPage(const Page& page) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  // Nothing may load from elsewhere: the page is complete as written.
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";
  out += "<title>" + HtmlEscape(page.title) + "</title><style>" + std::string(kStyle) + "</style></head>\n<body>";
  out += "<header><h1>" + HtmlEscape(page.title) + "</h1><p>" + HtmlEscape(page.subtitle) + "</p></header>\n<nav>";
  for (const Section& s : page.sections) out += fmt::format("<a href=\"#{}\">{}</a>", s.id, HtmlEscape(s.title));
  out += "</nav>\n<main>\n";
  for (const Section& s : page.sections) {
    out += fmt::format("<section id=\"{}\"><h2>{}</h2>\n{}\n</section>\n", s.id, HtmlEscape(s.title), s.html);
  }
  return out + "</main></body></html>\n";
}

}  // namespace fleetplan::report
