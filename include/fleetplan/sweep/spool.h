// A spool of JSON values by slot, on disk, so that a sweep's memory does not grow with its
// points: each value's canonical text goes to an unlinked scratch file in the system temp
// folder (it disappears with the process, even one that is killed); memory holds 12 bytes
// per slot (where the text starts and how long it is).
//
// Invariants: a slot is written at most once; Get returns exactly the value put (parsed
// back from its canonical text).
// Thread model: Put may be called from any thread (it takes a lock); Get and Has read
// concurrently with each other but not with Put.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

class JsonSpool {
 public:
  // A spool of `slots` empty slots. Errors: the scratch file cannot be created or the
  // slots cannot be counted in memory (InvalidInput saying which).
  static Expected<std::unique_ptr<JsonSpool>> Create(int64_t slots);
  ~JsonSpool();
  JsonSpool(const JsonSpool&) = delete;
  JsonSpool& operator=(const JsonSpool&) = delete;

  int64_t slots() const { return static_cast<int64_t>(offset_.size()); }
  // Slots written so far.
  int64_t size() const { return written_; }
  bool Has(int64_t slot) const;

  // Errors: a slot out of range or written before (InternalError naming it), a value with
  // no JSON form (CanonicalJson's error), a failed write (InvalidInput: disk full?).
  Status Put(int64_t slot, const Json& value);
  // The same with the value's canonical text already made (REQUIRES: canonical JSON).
  Status PutText(int64_t slot, std::string_view canonical);
  // REQUIRES: Has(slot). Errors: a failed read (InvalidInput).
  Expected<Json> Get(int64_t slot) const;

 private:
  JsonSpool(int fd, int64_t slots);

  int fd_ = -1;
  std::vector<int64_t> offset_;  // -1: empty
  std::vector<uint32_t> length_;
  int64_t end_ = 0;  // bytes in the file
  int64_t written_ = 0;
  std::mutex mu_;
};

}  // namespace fleetplan
