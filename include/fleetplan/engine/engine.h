// Engine: one serving-engine replica doing continuous batching over a paged KV pool.
//
// The engine is driven from outside (fleet/simulation.h owns the clock and the event
// queue): requests are Submitted, StartStep plans a step and says when it will end, and
// FinishStep applies it at that time. Between the two no state visible to scheduling
// changes except cancellations, which take effect at once for scheduling but release
// blocks only when the step in flight completes.
//
// Two seams, as in vLLM v1. Scheduling produces a StepPlan (below): the requests that
// run, their tokens this step, speculative rounds, the preemptions it made; the cost
// model prices the plan's chunks and FinishStep applies it. The KV cache manager
// (src/engine/kv_cache_manager.h) owns the block pool and the prefix cache; it is picked
// once from EngineConfig::prefix_cache, and with the cache off it is a manager whose
// every lookup misses, so the engine has no branch on the flag.
//
// Per request, one state variable chases another (vLLM v1's idea):
//
//   | prompt tokens ............................ | generated ... |
//   |<------------- num_computed ------------->|                 (tokens whose KV exists)
//   |<------------------- num_tokens -------------------------->| (prompt + sampled so far)
//
// A step computes chunk = min(num_tokens - num_computed, budget, caps) tokens of a
// request. When num_computed reaches num_tokens the step samples one token: generated
// += 1 (the first one is the time to first token), and unless the answer is complete
// num_tokens += 1. Chunked prefill, decode and recompute after preemption are all this
// arithmetic; there is no phase flag.
//
// Admission: `optimistic` admits when the first chunk's blocks are free and allocates as
// tokens are computed; when a running request cannot grow, the lowest-priority,
// latest-arrived running request not yet scheduled this step is preempted (recompute:
// its blocks are released and num_computed restarts at 0). `reserve` allocates blocks
// for prompt + output at admission and never preempts. Waiting requests never preempt
// running ones, so admitting work never forces a higher-priority request out.
// Rejection (longer than max_context, queue full, deadline unreachable) happens at Submit and touches no counter
// but the rejection count.
//
// Prefix cache (engine.prefix_cache on: the prefix KV cache manager). A request's full blocks have identities (block_hash.h)
// under its scope: the engine-wide CacheScopeBase, its adapter, its tenant namespace
// (its tenant, or one shared namespace with share_across_tenants) and the invalidation
// generations of those. At admission from the waiting queue (first time and after a
// preemption) the engine looks up the chain of its block hashes; the leading run found
// in the pool's index is a hit:
//
//   | hit: shared, sealed blocks | computed by this request ... | partial tail |
//   0                  used * B = num_computed at admission       ^ num_tokens
//
// used = min(hit blocks, (num_tokens - 1) / B): at least one token is always computed,
// so a fully cached sequence recomputes its last block (as vLLM does) and the step has a
// token to sample. The hit blocks take a reference; new blocks are private. When a step
// completes, the full blocks it computed are sealed and published (never at allocation,
// never for a request cancelled while the step ran). Blocks below num_computed / B are
// sealed (immutable); only blocks at or after it are written, and those are private to
// one request (refcount 1) - also for branches made by Fork, whose partial tail is
// copied. Invalidate() bumps a scope generation and unpublishes the matching blocks at
// once; a request admitted under the old scope finishes but publishes nothing more.
//
// Invariants (CheckInvariants): every pool refcount equals the number of live requests
// holding the block; pool free + used == total; writable blocks have refcount 1 and are
// not published; a published block held by a request sits below its num_computed and
// carries the hash the request computed for that position; with no live request the
// pool holds no reference (cached blocks may remain on the free list).
// Thread model: single-threaded; deterministic (no clocks, no randomness, no unordered
// iteration).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/engine/block_hash.h"
#include "fleetplan/engine/deadline_queue.h"
#include "fleetplan/engine/flat_index.h"
#include "fleetplan/engine/kv_pool.h"
#include "fleetplan/engine/scheduling_policy.h"
#include "fleetplan/engine/speculation.h"
#include "fleetplan/perf/cuda_graphs.h"
#include "fleetplan/perf/host_overhead.h"
#include "fleetplan/perf/step_cost.h"
#include "fleetplan/workload/request.h"

namespace fleetplan {

enum class AdmissionMode : int { kOptimistic = 0, kReserve = 1 };

struct PrefixCacheConfig {
  bool enabled = false;
  // false: every tenant is its own namespace (a request without tenant is in the
  // "no tenant" namespace); true: all tenants share one namespace.
  bool share_across_tenants = false;
  CacheScopeBase scope;
};

struct EngineConfig {
  SchedulerConfig scheduler;
  AdmissionMode admission = AdmissionMode::kOptimistic;
  int64_t block_tokens = 16;
  int64_t kv_blocks = 0;            // from the memory plan
  // The model's context window (model.max_context): a request whose prompt + output is
  // longer is rejected at Submit with a reason starting "context". 0 = no limit.
  int64_t max_context = 0;
  Duration host_overhead;  // CPU time per step the GPU waits for (the per-step term)
  // The batch-dependent terms of the host overhead (perf/host_overhead.h): per scheduled
  // sequence and per prompt token computed. Zero (the default): host_overhead alone.
  Duration host_per_sequence;
  Duration host_per_prefill_token;
  HostOverhead host() const { return {host_overhead, host_per_sequence, host_per_prefill_token}; }
  bool reject_unreachable_deadline = true;
  // Whether a step that preempted a running request may still admit waiting ones. vLLM's
  // V1 scheduler (0.8 on) admits none in such a step, so the blocks a preemption freed go
  // back to the running and preempted requests first; V0 admitted regardless. Scenarios
  // set it from engine.version.
  bool admit_in_preempting_step = true;
  // Optimistic admission as vLLM's V0 block manager does it: a request is admitted only
  // when the blocks for its whole prompt (not only its first chunk) are free and
  // int(`admission_watermark` × kv_blocks) stay free after them. V1 allocates per chunk
  // with no watermark (false, 0: the default). Scenarios set both from engine.version.
  bool admit_whole_prompt = false;
  double admission_watermark = 0.0;  // in [0, 1)
  PrefixCacheConfig prefix_cache;
  // engine.cuda_graphs: only counted here (bucket hit, padding, fallback); the cost of a
  // graphed step is the step model's (perf GraphedStepModel). Disabled = nothing counted.
  CudaGraphPolicy cuda_graphs;
  // engine.speculation (engine/speculation.h); disabled = ordinary decoding.
  SpeculationConfig speculation;
};

// What an invalidation changes. Values reach JSON by name (InvalidationKindName) and
// the scenario format: explicit, never renumber.
enum class InvalidationKind : int {
  kModelRevision = 0,  // every block
  kTokenizer = 1,      // every block
  kAdapter = 2,        // blocks of one adapter (target = AdapterId)
  kTenant = 3,         // blocks of one tenant's namespace (target = TenantId); with
                       // share_across_tenants that is the shared namespace
  kCorpus = 4,         // blocks of one tenant's namespace (target = TenantId), or of every
                       // namespace (target = kAllTargets). Block identities do not record
                       // which segments came from the corpus, so this drops the whole
                       // namespace: an upper bound on the cold-start cost.
};
std::string_view InvalidationKindName(InvalidationKind kind);
// "model-revision", "tokenizer", "adapter", "tenant", "corpus" (index = enum value).
const std::vector<std::string>& InvalidationKindNames();

inline constexpr int32_t kAllTargets = -2;

struct CacheInvalidation {
  InvalidationKind kind = InvalidationKind::kModelRevision;
  int32_t target = kAllTargets;  // adapter or tenant handle; see InvalidationKind
};

// Prefix-cache accounting, per class and in total. Lookups, hits and savings belong to
// the class of the request that looked up; evictions and invalidations to the class
// of the request that published the block.
//
// A request counts once: lookups, hits and savings are counted at its first admission
// (or at BeginImport), so saved_prefill_tokens is what the cache saved the fleet's
// prefill, not that times the request's preemptions. A re-admission after a preemption
// looks up again and takes what it finds, but counts only in rehit_blocks/rehit_tokens:
// those are recompute the cache absorbed, not prefill it saved. hit_rate's numerator and
// denominator are both first admissions only.
struct PrefixCacheCounters {
  int64_t lookups = 0;               // first admissions that looked up the cache
  int64_t lookup_tokens = 0;         // the requests' tokens at those admissions
  int64_t hit_blocks = 0;            // leading full blocks found in the index
  int64_t hit_tokens = 0;            // hit_blocks * block_tokens
  int64_t saved_prefill_tokens = 0;  // tokens not computed thanks to hits (hit tokens
                                     // less the last block when everything hit)
  Duration saved_prefill;            // cost model: one-step prefill of the request's
                                     // tokens without the hit, minus with it
  int64_t rehit_blocks = 0;          // leading full blocks found at re-admissions after a
                                     // preemption (not in hit_blocks)
  int64_t rehit_tokens = 0;          // rehit_blocks * block_tokens
  int64_t evictions = 0;
  int64_t invalidations = 0;

  PrefixCacheCounters& operator+=(const PrefixCacheCounters& o);
  // {lookups, lookup_tokens, hit_blocks, hit_tokens, saved_prefill_tokens,
  //  saved_prefill_ms, hit_rate (= hit_tokens / lookup_tokens; 0 without lookups),
  //  rehit_tokens, evictions, invalidations}
  Json ToJson() const;
};

// How a request ended. Values reach JSON by name (RequestStatusName).
enum class RequestStatus : int { kOk = 0, kRejected = 1, kCancelled = 2, kTimeout = 3 };
std::string_view RequestStatusName(RequestStatus s);

// Everything the metrics layer needs about one finished request.
struct RequestOutcome {
  RequestId id = 0;
  ClassId class_id = 0;
  TenantId tenant = kNoTenant;
  int32_t replica = 0;
  RequestStatus status = RequestStatus::kOk;
  SimTime arrival;
  std::optional<SimTime> first_token;
  std::optional<SimTime> finish;     // set for ok; the time it left the engine otherwise
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;         // tokens actually generated
  Duration itl_max;                  // largest gap between consecutive output tokens
  int32_t preemptions = 0;
  int64_t cached_tokens = 0;         // tokens taken from the prefix cache, over admissions
  std::string reason;                // for rejections: why
  std::optional<Duration> retry_after;  // fleet admission's rejections: when to try again
};

// One step as it ran, for timelines and statistics.
struct StepRecord {
  int32_t replica = 0;
  SimTime start;
  SimTime end;
  StepShape shape;
  Duration host;
  Duration gpu;
  int64_t kv_used_blocks = 0;
  int64_t kv_cached_blocks = 0;      // published blocks (referenced or evictable)
  int64_t kv_evictable_blocks = 0;   // published blocks on the free list
  int64_t waiting = 0;
  int64_t running = 0;
};

// Receives what the engine does; the fleet turns it into records and timelines.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void OnRequestDone(const RequestOutcome& outcome) = 0;
  virtual void OnStep(const StepRecord& step) { (void)step; }
  virtual void OnFirstToken(int32_t replica, RequestId id, SimTime t) { (void)replica; (void)id; (void)t; }
  // Every output token (index 0 is the first), only while Engine::set_token_events is on.
  virtual void OnToken(int32_t replica, RequestId id, int64_t index, SimTime t) {
    (void)replica; (void)id; (void)index; (void)t;
  }
};

// CUDA-graph use over decode-only steps (the only steps a graph can replay). Steps with
// prefill work run eager and are not counted here.
struct GraphCounters {
  int64_t decode_only_steps = 0;
  int64_t graphed_steps = 0;     // replayed a captured bucket
  int64_t fallback_steps = 0;    // above the largest bucket: eager at the real size
  int64_t unexpected_fallbacks = 0;  // fallbacks while eager_fallback is false
  int64_t real_slots = 0;        // decodes in graphed steps
  int64_t padded_slots = 0;      // bucket sizes of graphed steps (>= real_slots)
  // {enabled, decode_only_steps, bucket_hit_rate, padding_ratio (padding / padded slots),
  //  fallback_rate, unexpected_fallbacks}; rates are 0 with no decode-only step.
  Json ToJson(bool enabled) const;
  GraphCounters& operator+=(const GraphCounters& o);
};

struct EngineStats {
  int64_t steps = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t preemptions = 0;
  int64_t rejections = 0;
  int64_t cancellations = 0;
  int64_t timeouts = 0;
  int64_t completed = 0;
  int64_t kv_peak_blocks = 0;
  double kv_block_seconds = 0;       // integral of used blocks over time (for the mean)
  Duration busy;                      // sum of step durations
  Duration max_decode_gap;            // longest gap between two tokens of one request,
                                      // excluding gaps that span a preemption
  int64_t steps_over_time_cap = 0;    // steps longer than the policy's cap while decoding
  int64_t extrapolated_steps = 0;     // steps the cost model had to extrapolate
  double kv_cached_block_seconds = 0;  // integral of published blocks over time
  GraphCounters cuda_graphs;           // zero when engine.cuda_graphs is off
  SpeculationCounters speculation;     // zero when engine.speculation is off
  // Decode-only steps by their decode batch size (index = batch size; trailing zeros
  // trimmed): the distribution the graphs gate chooses buckets for.
  std::vector<int64_t> decode_batch_steps;
  PrefixCacheCounters prefix_cache;    // all classes
  std::vector<PrefixCacheCounters> prefix_cache_by_class;  // index: ClassId
  // Adds `prefix_cache` (PrefixCacheCounters::ToJson plus mean_pool_share, the mean share
  // of the pool holding published blocks) to the engine figures.
  // `cuda_graphs` (GraphCounters::ToJson) is always present, `enabled` false when off;
  // `speculation` (SpeculationCounters::ToJson) only when it is on; `decode_batches`
  // lists [batch size, decode-only steps] for every size that ran.
  // `speculation_basis`: present when speculation is on, the basis its cost is judged on.
  Json ToJson(int64_t kv_blocks, Duration span, bool cuda_graphs_enabled,
              std::optional<SpeculationBasis> speculation_basis = std::nullopt) const;
  // Fleet totals: counts, integrals and histograms add, max_decode_gap takes the maximum; the sum of
  // kv_peak_blocks is not a fleet peak (callers must not report it as one). Per-class
  // counters are left alone (read them per replica: Engine::prefix_cache_for_class).
  EngineStats& operator+=(const EngineStats& o);
};

// StepPlan: one step as scheduling decided it, the contract between the engine's
// scheduler and the rest of the step (DESIGN.md "Key shapes"):
//
//   StartStep   Schedule ─► StepPlan ─► step cost model (its chunks) ─► the step's end
//   FinishStep  at that end, the plan is applied: each entry's tokens are computed,
//               tokens sampled, filled blocks sealed; nothing is scheduled or allocated
//
// entries[i] and chunks[i] are one scheduled request's work in the step:
//
//   | context_tokens: computed before the step | new_tokens: computed by it |
//
// A decode computes one token and samples one. A speculative round (drafted > 0)
// verifies 1 + drafted tokens, a prefill-shaped chunk for the cost model, and keeps
// 1 + the accepted drafts (speculation.h). A prefill chunk samples a token only when it
// completes the prompt.
//
// Invariants (the scheduler builds them; tests check them): entries.size() ==
// chunks.size(); entries[i].new_tokens == chunks[i].new_tokens >= 1; no request appears
// twice; total_tokens() <= scheduler.max_batched_tokens; verify_tokens is the sum of
// new_tokens over the entries with drafted > 0; the blocks for every entry's tokens were
// allocated while planning. Preemptions happen while planning (they free the blocks the
// plan then uses) and are listed in `preempted`.
struct StepPlan {
  struct Entry {
    int32_t slot;        // the request's slot in the engine (Engine::planned_request)
    int32_t drafted;     // speculative tokens verified with this chunk (0: not a round)
    int64_t new_tokens;  // tokens computed by the step
  };
  std::vector<Entry> entries;
  std::vector<StepChunk> chunks;     // the cost model's input, index-aligned with entries
  std::vector<RequestId> preempted;  // running requests preempted while planning, in order
  int64_t verify_tokens = 0;         // tokens of the speculative rounds' chunks

  bool empty() const { return entries.empty(); }
  // Tokens the step computes: the sum of new_tokens.
  int64_t total_tokens() const;
  void clear();  // empties the plan, keeping the vectors' capacity
};

struct LiveRequest;    // per-request state (src/engine/engine_live.h)
class KvCacheManager;  // the block pool and the prefix cache (src/engine/kv_cache_manager.h)

// A read-only view of one live request (tests and tools). The span is valid until the
// engine is next modified.
struct RequestView {
  bool running = false;              // false: waiting (or cancelled in the step in flight)
  int64_t num_tokens = 0;
  int64_t num_computed = 0;
  int64_t generated = 0;
  int64_t cached_tokens = 0;
  int32_t preemptions = 0;
  std::span<const BlockId> blocks;
};

class Engine {
 public:
  // REQUIRES: cost model outlives the engine; observer may be null.
  static Expected<std::unique_ptr<Engine>> Create(int32_t replica, const EngineConfig& config,
                                                  const StepCostModel* cost, EngineObserver* observer);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // A request reaches this replica at `now`. It may be rejected at once.
  void Submit(const Request& request, SimTime now);
  // The client gives up. Waiting requests leave at once; a request in the step in flight
  // stops being scheduled and releases its blocks when that step completes.
  void Cancel(RequestId id, SimTime now);
  // Prefix cache: applies an invalidation now (see InvalidationKind). No-op when the
  // cache is disabled.
  void Invalidate(const CacheInvalidation& invalidation);
  // Branches (parallel sampling n > 1, a forked conversation): a new request `child_id`
  // continues from `parent`'s computed tokens with its own answer of `output_tokens`
  // tokens, its first of which is sampled now (the same step sampled the parent's
  // latest token). The child inherits class, tenant, adapter, priority, arrival and
  // deadline; its prompt is the parent's computed tokens (prompt, then the answer so
  // far). It shares the parent's full blocks (a reference each) and gets a private copy
  // of the parent's partial tail block, so no block is writable by both. Returns false,
  // changing nothing, when no block is free for that copy.
  // REQUIRES: !step_in_flight(); parent live, running and decoding (generated >= 1);
  // child_id not live; output_tokens >= 1.
  bool Fork(RequestId parent, RequestId child_id, int64_t output_tokens, SimTime now);

  // Disaggregated serving (fleet/simulation.h): a request whose prompt was computed on
  // another replica and whose KV moves here.
  //   BeginImport  allocates the destination blocks for its prompt (all of prompt +
  //                output with `reserve` admission) at `now` and holds them while the KV
  //                moves; the request is neither waiting nor running. With the prefix
  //                cache, the leading blocks this replica already holds are taken as
  //                hits (counted as a lookup, not as saved prefill) and only the rest
  //                moves. Returns the prompt tokens whose KV must move, or nullopt,
  //                changing nothing, when the blocks are not free: an import never
  //                preempts and never evicts a referenced block.
  //   FinishImport the KV arrived: the request runs with its prompt computed and its
  //                first token (sampled by the prefill replica, delivered with the KV)
  //                counted at `now`; it decodes from the next step. A one-token answer
  //                ends at once.
  //   AbortImport  the transfer failed or was abandoned: the destination blocks go back
  //                to the pool unpublished (their content is discarded) and the request
  //                is forgotten here without an outcome; the caller decides what follows.
  // REQUIRES: BeginImport: r not live here; Finish/AbortImport: id is importing.
  std::optional<int64_t> BeginImport(const Request& r, SimTime now);
  void FinishImport(RequestId id, SimTime now);
  void AbortImport(RequestId id);
  int64_t importing_count() const { return importing_; }

  // Token events (EngineObserver::OnToken) for every output token; off by default, so the
  // step path pays one predictable branch per sampled token.
  void set_token_events(bool on) { token_events_ = on; }

  bool step_in_flight() const { return in_flight_; }
  bool HasWork() const { return waiting_live_ > 0 || !running_.empty(); }
  // Plans a step at `now`; returns its end time, or nullopt when there is nothing to run.
  // REQUIRES: !step_in_flight().
  std::optional<SimTime> StartStep(SimTime now);
  // Moves the end of the step in flight to `end`: the replica waits for the other ranks it
  // steps in lock-step with (fleet/simulation.h ReplicaSetup::lockstep_group). The step's
  // host and GPU times stay as planned; its record spans start to `end`.
  // REQUIRES: step_in_flight(), end >= the planned end.
  void StretchStep(SimTime end);
  // Applies the step in flight. REQUIRES: step_in_flight(), now == its end time.
  void FinishStep(SimTime now);
  // The plan of the step in flight (empty when none), and the id of the request an
  // entry's slot holds. REQUIRES (planned_request): the slot holds a live request.
  const StepPlan& planned_step() const { return plan_; }
  RequestId planned_request(int32_t slot) const;

  int32_t replica() const { return replica_; }
  int64_t waiting_count() const { return waiting_live_; }
  int64_t running_count() const { return static_cast<int64_t>(running_.size()); }
  int64_t live_requests() const { return index_.size(); }
  const KvBlockPool& pool() const;
  const EngineStats& stats() const { return stats_; }
  const EngineConfig& config() const { return config_; }
  // Tokens of queued and running work not yet computed (a router's load signal).
  int64_t outstanding_tokens() const { return outstanding_tokens_; }
  // Prompt tokens of `r` the prefix cache would supply if it were admitted now (0 with
  // the cache off): what a precise router sees. Read-only.
  int64_t PeekCachedPrefixTokens(const Request& r) const;
  std::optional<RequestView> request(RequestId id) const;
  // The live requests' ids in increasing order (a fleet giving up a lost replica's
  // requests), and one live request as it was submitted (nullptr when not live here).
  std::vector<RequestId> LiveIds() const;
  const Request* live_request(RequestId id) const;
  // Prefix-cache counters of one class (zeros for a class never seen).
  PrefixCacheCounters prefix_cache_for_class(ClassId class_id) const;

  Status CheckInvariants() const;

 private:
  using Live = LiveRequest;  // per-request state, freed when the request ends

  Engine(int32_t replica, const EngineConfig& config, const StepCostModel* cost,
         std::unique_ptr<SchedulingPolicy> policy, EngineObserver* observer);

  int32_t NewSlot(const Request& r, SimTime now);
  void FreeSlot(int32_t slot);
  void End(int32_t slot, RequestStatus status, SimTime now, std::string reason = {});
  void Reject(const Request& r, SimTime now, std::string reason);
  bool DeadlineUnreachable(const Request& r, SimTime now) const;
  // GPU time of a decode step of everything running plus one more, each `context`
  // tokens long (DeadlineUnreachable's prediction).
  Duration PredictedDecodeStep(int64_t context) const;
  // The host overhead of a step of `chunks` (EngineConfig::host()); O(1) when it does not
  // depend on the batch, O(batch) otherwise.
  Duration StepHost(std::span<const StepChunk> chunks) const;

  // The waiting queue. Each time a request enters it, it takes a position: submissions
  // increasing ones at the back, preemptions decreasing ones at the front, so queue
  // order is position order and a position names one stay in the queue. Three views
  // share the positions:
  //   waiting_            the queue in position order; an entry is current while its
  //                       slot is waiting at that position, else stale (the request was
  //                       admitted, cancelled or timed out, the slot perhaps reused) and
  //                       skipped, dropped at the front, compacted once stale ones
  //                       outnumber current ones;
  //   deadlines_          the stays with a deadline, in a monotone queue from which a
  //                       step takes all that are due (deadline_queue.h), stale entries
  //                       dropped when taken or compacted;
  //   prefill_groups_     (policies that reorder prefill only) per priority, the stays
  //                       ordered by (enqueued_step, position), and by position; exact,
  //                       no stale entries.
  // Leaving the queue is O(1) (plus O(log n) with prefill_groups_) and a step's work on
  // the queue is proportional to what it admits or expires, not to the queue's length.
  struct WaitEntry {
    int64_t pos;
    int32_t slot;
  };
  struct AgeEntry {
    int64_t enqueued_step;
    int64_t pos;
    int32_t slot;
    auto operator<=>(const AgeEntry&) const = default;
  };
  struct PriorityGroup {
    std::set<AgeEntry> by_age;                     // (enqueued_step, pos): key order
    std::set<std::pair<int64_t, int32_t>> by_pos;  // (pos, slot): queue order
  };
  void EnqueueWaiting(int32_t slot, bool front);
  // Marks the slot's stay stale in waiting_ and deadlines_ and removes it from
  // prefill_groups_. REQUIRES: the slot is waiting.
  void LeaveWaiting(int32_t slot);
  bool IsCurrent(int32_t slot, int64_t pos) const;
  // Drops stale entries once they outnumber the current ones (amortized O(1)).
  void CompactWaiting();
  // The next prefill candidate of a reordering policy: the highest PrefillKey, ties by
  // queue order (what a stable sort of the queue by key gives), or -1 when none waits.
  // REQUIRES: PrefillKey non-decreasing in waiting_steps for a fixed priority (aging).
  int32_t NextByPrefillKey() const;
  Status CheckWaiting() const;

  void ExpireWaiting(SimTime now);
  // Builds plan_ for this step: decodes, partial prefills and admissions in the policy's
  // order (or the next step of a multi-step decode run), allocating and preempting as it
  // goes. Changes no request's num_computed except by preemption and prefix hits.
  void Schedule();
  // The planned step goes in flight at `now`: priced (host, GPU, draft model); returns
  // its end. REQUIRES: !plan_.empty().
  SimTime Launch(SimTime now);
  void ScheduleDecodes(int64_t& budget);
  void SchedulePartialPrefills(int64_t& budget);
  void ScheduleWaiting(int64_t& budget);
  // Admits waiting `slot` with its first chunk if its blocks are free and the budget
  // gives it a chunk; false (changing nothing) otherwise, which ends admission this step.
  bool Admit(int32_t slot, int64_t& budget);
  bool StepOnlyDecodes() const;  // every chunk scheduled so far this step is a decode
  // The next prefill chunk of `l` if `computed` tokens of it were computed.
  int64_t PrefillChunk(const Live& l, int64_t budget, int64_t computed) const;
  // Allocates blocks for `new_tokens` more tokens, preempting others if needed; false
  // when it cannot (the request itself may have been preempted).
  bool Grow(int32_t slot, int64_t new_tokens);
  bool GrowBlocks(int32_t slot, int64_t new_tokens);  // Grow when the held blocks do not suffice
  // Preempts the lowest-priority, latest-arrived running request not yet in this step;
  // false when there is none or the victim is `keep_slot` itself.
  bool PreemptOneAfter(int32_t keep_slot);
  void Preempt(int32_t slot);
  void AddChunk(int32_t slot, int64_t new_tokens, int32_t drafted = 0);
  // Speculation: the tokens a decoding request drafts this step (0: decodes ordinarily),
  // and the draft model's GPU time for the rounds in the plan.
  int64_t DraftTokens(const Live& l, int64_t budget) const;
  Duration DraftTime();
  // Costs the planned step with every round an ordinary decode, into the counters.
  void CountOrdinaryEquivalent();
  int64_t CapByStepTime(int64_t new_tokens, int64_t context) const;
  void InsertRunning(int32_t slot);
  void RemoveRunning(int32_t slot);
  template <bool kTokenEvents>
  void ApplyChunk(const StepPlan::Entry& p, SimTime now);
  template <bool kTokenEvents>
  void ApplyPlan(SimTime now);  // every entry of plan_, the step in flight
  // One sampled token of running request `l` (in `slot`) at `now`: first-token and gap
  // bookkeeping, the token event, and the end of its answer. False when the request ended.
  template <bool kTokenEvents>
  bool SampleToken(Live& l, int32_t slot, SimTime now);
  template <bool kTokenEvents>
  void ApplyRound(const StepPlan::Entry& p, SimTime now);  // ApplyChunk of a speculative round
  template <bool kSpeculate>
  void ScheduleDecodeLoop(int64_t& budget);  // ScheduleDecodes' walk
  void CountGraphUse(const StepShape& shape);
  void CountDecodeBatch(int64_t decodes);  // stats_.decode_batch_steps

  int32_t replica_;
  EngineConfig config_;
  const StepCostModel* cost_;
  std::unique_ptr<SchedulingPolicy> policy_;
  EngineObserver* observer_;
  // The KV cache: block pool plus prefix cache or none, chosen once from
  // config_.prefix_cache (MakeKvCacheManager). Writes the prefix-cache part of stats_.
  std::unique_ptr<KvCacheManager> kv_;

  std::vector<Live> slots_;
  std::vector<int32_t> free_slots_;
  RequestIndex index_;  // live requests' slots by id; lookup only, never iterated
  // The waiting queue (see EnqueueWaiting): arrival order, preempted requests at the front.
  std::deque<WaitEntry> waiting_;
  DeadlineQueue deadlines_;
  std::map<int32_t, PriorityGroup> prefill_groups_;  // by priority; only if ReordersPrefill
  int64_t waiting_live_ = 0;       // current entries of waiting_
  int64_t waiting_deadlines_ = 0;  // current entries of deadlines_
  int64_t next_back_pos_ = 0;      // the next submission's position
  int64_t next_front_pos_ = -1;    // the next preemption's position
  std::vector<DeadlineStay> expired_;  // ExpireWaiting's scratch
  std::vector<int32_t> running_;   // ordered by (priority desc, arrival asc)
  // No running request's deadline is earlier (a lower bound: lowered as requests start
  // running, made exact by each scan), so a step reads the running requests' deadlines
  // only when one may have passed: they sit on a cache line a decode touches nowhere else.
  SimTime running_deadline_floor_ = SimTime::Max();

  bool in_flight_ = false;
  SimTime step_start_;
  SimTime step_end_;
  Duration step_host_;
  Duration step_gpu_;
  // The step being planned (from StartStep's Schedule) or in flight (until FinishStep
  // applied it); its vectors keep their capacity between steps.
  StepPlan plan_;
  std::vector<int32_t> decode_order_;  // ScheduleDecodes' scratch
  int64_t decode_run_left_ = 0;        // steps left in a multi-step decode run (num_scheduler_steps)
  std::vector<StepChunk> draft_chunks_;  // DraftTime's and CountOrdinaryEquivalent's scratch
  int64_t step_index_ = 0;
  int64_t outstanding_tokens_ = 0;
  int64_t importing_ = 0;  // live requests between BeginImport and Finish/AbortImport
  bool token_events_ = false;
  // PredictedDecodeStep's last answer (a cache of a pure function) and its scratch.
  struct PredictedDecode {
    int64_t seqs = -1;
    int64_t context = -1;
    Duration cost;
    std::vector<StepChunk> chunks;
  };
  mutable PredictedDecode predicted_decode_;
  EngineStats stats_;
  int64_t watermark_blocks_ = 0;  // int(admission_watermark × kv_blocks)
};

}  // namespace fleetplan
