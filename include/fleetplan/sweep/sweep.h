// Running a sweep: every point of a spec (or of one shard) on threads or across MPI
// ranks, then the summary (summary.h) written as DIR/sweep.json and DIR/sweep.csv.
//
//   1. Validate: every point of the shard is bound before any simulation starts; a point
//      that does not bind is an `invalid` row with its located reason, never dropped.
//   2. Run: valid points on `jobs` threads (a shared counter hands out indices) or, under
//      mpirun, on every rank (rank 0 hands out indices as ranks ask and runs points on a
//      thread of its own). A point's row depends only on the spec and its index, so the
//      output bytes are the same for any jobs, ranks or completion order.
//   3. Shards: `--shard I/N` runs the points whose index = I (mod N) and writes
//      DIR/sweep-partial.json; MergePartials combines the N partials of one spec (same
//      digest, every shard once) into the document one run would write.
// Memory: a row goes to a spool on disk (spool.h) as its point completes, and every writer
// streams from there; plans and simulations live only while a point runs. Peak memory is
// that of the points running at once plus 12 bytes per point, not the rows.
// Thread model: RunSweepPoints uses its own threads; the spec is shared read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/core/status.h"
#include "fleetplan/sweep/spec.h"
#include "fleetplan/sweep/spool.h"
#include "fleetplan/sweep/summary.h"

namespace fleetplan {

struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};

// "I/N" with 0 <= I < N.
Expected<Shard> ParseShard(std::string_view text);

// The point indices of a shard, ascending.
std::vector<int64_t> ShardIndices(const SweepSpec& spec, const Shard& shard);

// Called once per point as it completes (from any thread): rows done so far, failed so far.
using PointDoneFn = std::function<void(int64_t done, int64_t failed)>;

// Runs the points of `indices`, putting each one's row into `rows` (slot = point index)
// as it completes. Never fails for a point's sake: its error is its row. Errors: `rows`
// cannot be written (the first such error; the remaining points still run).
// REQUIRES: rows.slots() == spec.points().
Status RunSweepPoints(const SweepSpec& spec, const std::vector<int64_t>& indices, int jobs, JsonSpool& rows,
                      const PointDoneFn& on_done = {});

// Whether this build can run points across MPI ranks.
bool SweepMpiAvailable();
// Under mpirun: every rank runs points; rank 0 puts every row of `indices` into `rows`,
// the other ranks pass nullptr. Errors: MPI could not start, `rows` cannot be written.
// REQUIRES: SweepMpiAvailable(); every rank calls it with the same spec and indices;
// MpiInit before, MpiFinalize after.
Status RunSweepPointsMpi(const SweepSpec& spec, const std::vector<int64_t>& indices, JsonSpool* rows,
                         const PointDoneFn& on_done = {});
Status MpiInit(int* argc, char*** argv);
void MpiFinalize();
int MpiRank();

// A shard's partial result, written piece by piece: {"kind": "fleetplan-sweep-partial",
// "points" (the rows in `rows`, by index), "shard", "spec"}.
Status WritePartial(const SweepSpec& spec, const Shard& shard, const JsonSpool& rows, const TextSink& sink);

// The sweep from partial result files, read as a stream (a file's rows go to the spool one
// at a time). Errors (InvalidInput, naming the files): a file that is not a partial
// (unreadable, not JSON, nested deeper than the JSON limit), partials of different specs
// (digests named), a shard count that differs, a shard missing or given twice.
Expected<SweepResult> MergePartials(const std::vector<std::string>& paths);

// Writes DIR/sweep.json and DIR/sweep.csv, streamed; returns the paths written.
Expected<std::vector<std::string>> WriteSweep(const SweepResult& sweep, const std::string& dir);

}  // namespace fleetplan
