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
// Memory: rows are kept (a few KB each); plans and simulations live only while a point
// runs, so peak memory grows with rows, not with the work of a point.
// Thread model: RunSweepPoints uses its own threads; the spec is shared read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/sweep/spec.h"

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

// Rows of `indices` (same order). Never fails for a point's sake: its error is its row.
std::vector<Json> RunSweepPoints(const SweepSpec& spec, const std::vector<int64_t>& indices, int jobs,
                                 const PointDoneFn& on_done = {});

// Whether this build can run points across MPI ranks.
bool SweepMpiAvailable();
// Under mpirun: rank 0 returns the rows of `indices`; every other rank runs points and
// returns nullopt. Errors: MPI could not start. REQUIRES: SweepMpiAvailable(); every rank
// calls it with the same spec and indices; MpiInit before, MpiFinalize after.
Expected<std::optional<std::vector<Json>>> RunSweepPointsMpi(const SweepSpec& spec, const std::vector<int64_t>& indices,
                                                             const PointDoneFn& on_done = {});
Status MpiInit(int* argc, char*** argv);
void MpiFinalize();
int MpiRank();

// A shard's partial result: {"kind": "fleetplan-sweep-partial", "spec", "shard", "points"}.
Json PartialJson(const SweepSpec& spec, const Shard& shard, std::vector<Json> rows);
// The sweep document from partials (each named for messages). Errors (InvalidInput):
// partials of different specs (digests named), a shard count that differs, a shard
// missing or given twice (named), a partial that is not one.
Expected<Json> MergePartials(const std::vector<Json>& partials, const std::vector<std::string>& names);

// Writes DIR/sweep.json and DIR/sweep.csv; returns the paths written.
Expected<std::vector<std::string>> WriteSweep(const Json& sweep, const std::string& dir);

}  // namespace fleetplan
