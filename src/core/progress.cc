#include "fleetplan/core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

namespace fleetplan {
namespace {

ProgressMode Resolve(std::ostream& out, ProgressMode mode) {
  if (mode != ProgressMode::kAuto) return mode;
  const bool is_stderr = &out == &std::cerr || &out == &std::clog;
  return is_stderr && ::isatty(STDERR_FILENO) == 1 ? ProgressMode::kTerminal : ProgressMode::kPlain;
}

}  // namespace

Progress::Progress(std::ostream& out, std::string what, std::string unit, int64_t total, ProgressOptions options)
    : out_(out),
      what_(std::move(what)),
      unit_(std::move(unit)),
      total_(std::max<int64_t>(total, 0)),
      options_(options),
      mode_(Resolve(out, options.mode)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Update(int64_t done, int64_t failed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  done_ = std::max(done_, done);
  failed_ = std::max(failed_, failed);
  DrawLocked(false);
}

void Progress::Advance(int64_t n, int64_t failed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  done_ += n;
  failed_ += failed;
  DrawLocked(false);
}

void Progress::SetDetail(std::string detail) {
  std::lock_guard<std::mutex> lock(mu_);
  detail_ = std::move(detail);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  // A run that never drew (it was quick) stays silent on a terminal; plain logs always get
  // the final line so a log records what was done.
  if (mode_ == ProgressMode::kQuiet || (mode_ == ProgressMode::kTerminal && !drew_)) return;
  DrawLocked(true);
}

void Progress::Abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (mode_ == ProgressMode::kTerminal && drew_) {
    out_ << '\n';
    out_.flush();
  }
}

void Progress::DrawLocked(bool final_line) {
  if (mode_ == ProgressMode::kQuiet) return;
  const auto now = std::chrono::steady_clock::now();
  const auto interval = mode_ == ProgressMode::kTerminal ? options_.min_redraw : options_.plain_interval;
  if (!final_line && now - last_draw_ < interval) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = Line(what_, unit_, done_, total_, failed_, elapsed, detail_, options_.bar_width);
  if (mode_ == ProgressMode::kTerminal) {
    const size_t width = line.size();
    if (width < last_width_) line.append(last_width_ - width, ' ');  // erase a longer line
    last_width_ = width;
    out_ << '\r' << line;
    if (final_line) out_ << '\n';
  } else {
    out_ << line << '\n';
  }
  out_.flush();
  drew_ = true;
}

std::string Progress::FormatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 10) return fmt::format("{:.1f}s", seconds);
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string Progress::Line(const std::string& what, const std::string& unit, int64_t done, int64_t total,
                           int64_t failed, double elapsed_s, const std::string& detail, int bar_width) {
  std::string line = what;
  if (total > 0) {
    const double fraction = std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * bar_width);
    line += fmt::format(" [{}{}] {}/{} {} {:.0f}%", std::string(static_cast<size_t>(filled), '#'),
                        std::string(static_cast<size_t>(bar_width - filled), '.'), done, total, unit,
                        fraction * 100);
    if (done >= total) {
      line += " in " + FormatSeconds(elapsed_s);
    } else if (done > 0) {
      const double eta = elapsed_s * static_cast<double>(total - done) / static_cast<double>(done);
      line += " ETA " + FormatSeconds(eta);
    }
  } else {
    line += fmt::format(" {} {}, {}", done, unit, FormatSeconds(elapsed_s));
  }
  if (failed > 0) line += fmt::format(", {} failed", failed);
  if (!detail.empty()) line += ", " + detail;
  return line;
}

}  // namespace fleetplan
