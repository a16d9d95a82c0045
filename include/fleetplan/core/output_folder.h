// OutputFolder: the files of one run in one folder, written as a set.
//
// The rule (docs/limits.md, "Output files"):
//   - Lock takes an exclusive lock on DIR/.fleetplan.lock (flock, close-on-exec) for as
//     long as the OutputFolder lives. A second run on the same folder, in this process or
//     another, is refused (exit 3, a message naming the lock) rather than mixing its files
//     with the first run's. The lock goes with the process: a killed run leaves none held.
//   - Each file (Add) is written to a temp file beside its name. Nothing in the folder
//     changes until Commit, which finishes every file (flush, fsync, close) and only then
//     renames them into place, one after the other, and removes the files an earlier run
//     left that this one does not write. A run that fails, is interrupted or meets a full
//     disk before Commit leaves the earlier run's files as they were.
//   - Temp files a killed run left behind (NAME.tmp.*) are removed by the next run that
//     writes NAME, or that owns NAME and does not write it.
// Thread model: single-threaded; different folders may be written at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fleetplan/core/output_file.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

class OutputFolder {
 public:
  static constexpr const char* kLockName = ".fleetplan.lock";

  // Creates `dir` (and its parents) when missing and locks it. A folder locked by another
  // run: InvalidInput (exit 3) "cannot write to '<dir>': another fleetplan run is writing
  // there (it holds <dir>/.fleetplan.lock); wait for it or pick another --out".
  static Expected<std::unique_ptr<OutputFolder>> Lock(const std::string& dir);
  ~OutputFolder();  // removes the temp files of an uncommitted set; releases the lock
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::string& dir() const { return dir_; }
  std::string PathOf(const std::string& name) const { return dir_ + "/" + name; }

  // Opens `name` (a file name inside the folder) for this set. The pointer lives as long
  // as the folder. REQUIRES: not committed; `name` not added before.
  Expected<OutputFile*> Add(const std::string& name);

  // Finishes every added file, then renames each into place, then removes each of
  // `owned` (names a run of this kind may write) that this set did not add and an
  // earlier run left; their paths go to `removed`. REQUIRES: called once.
  Status Commit(const std::vector<std::string>& owned, std::vector<std::string>* removed);

 private:
  OutputFolder(std::string dir, int lock_fd) : dir_(std::move(dir)), lock_fd_(lock_fd) {}

  std::string dir_;
  int lock_fd_ = -1;
  std::vector<std::pair<std::string, std::unique_ptr<OutputFile>>> files_;
  bool committed_ = false;
};

}  // namespace fleetplan
