// Progress on stderr for runs that can take more than a couple of seconds.
//
// A Progress reports `done` of `total` units (points, events, simulated seconds, nodes):
//   on a terminal     one line redrawn in place: "sweep [#####.....] 12/64 points 19% ETA 41s, 1 failed"
//   otherwise         a plain line at most every `plain_interval` (logs stay readable)
//   quiet             nothing at all
// Finish() prints the final state once and ends the line. With total = 0 (unknown) it
// shows counts and the elapsed time, no bar or ETA.
//
// Progress reads the wall clock: it is the only place a wall clock may be read next to a
// run, and nothing it measures reaches a result. Updates are cheap when nothing is drawn
// (a clock read at most every `min_redraw`), so callers may update per unit of work.
// Thread model: Update/Note may be called from several threads (internally locked).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

namespace fleetplan {

enum class ProgressMode { kAuto, kTerminal, kPlain, kQuiet };

struct ProgressOptions {
  ProgressMode mode = ProgressMode::kAuto;  // kAuto: terminal when the stream is stderr on a tty
  std::chrono::milliseconds min_redraw{100};
  std::chrono::milliseconds plain_interval{5000};
  int bar_width = 24;
};

class Progress {
 public:
  // `what` names the run ("sweep"); `unit` the counted things ("points").
  Progress(std::ostream& out, std::string what, std::string unit, int64_t total, ProgressOptions options = {});
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();  // Finish() if not yet finished

  // Sets the count done (monotone: a smaller value is ignored) and how many failed.
  void Update(int64_t done, int64_t failed = 0);
  // Adds `n` units done (and `failed` failures).
  void Advance(int64_t n = 1, int64_t failed = 0);
  // A short free-form status shown after the counts ("rate 12.5/s").
  void SetDetail(std::string detail);
  void Finish();
  // Ends without the final line: the run failed and its error follows (a terminal line
  // already drawn is ended so the error starts on a line of its own).
  void Abandon();

  bool drawing() const { return mode_ != ProgressMode::kQuiet; }

  // "1h02m", "3m05s", "41s", "0.4s": the compact durations the line uses.
  static std::string FormatSeconds(double seconds);
  // The line for a state (no wall clock inside: `elapsed` is given), for tests.
  static std::string Line(const std::string& what, const std::string& unit, int64_t done, int64_t total,
                          int64_t failed, double elapsed_s, const std::string& detail, int bar_width);

 private:
  void DrawLocked(bool final_line);

  std::ostream& out_;
  std::string what_;
  std::string unit_;
  int64_t total_ = 0;
  ProgressOptions options_;
  ProgressMode mode_ = ProgressMode::kQuiet;
  std::mutex mu_;
  int64_t done_ = 0;
  int64_t failed_ = 0;
  std::string detail_;
  bool finished_ = false;
  bool drew_ = false;
  size_t last_width_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// The mode a verb uses: quiet when asked, else kAuto.
inline ProgressOptions ProgressFor(bool quiet) {
  ProgressOptions o;
  if (quiet) o.mode = ProgressMode::kQuiet;
  return o;
}

}  // namespace fleetplan
