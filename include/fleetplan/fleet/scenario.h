// Scenario: a whole scenario file (spec: docs/scenario.md; reference:
// the built-in Atlas scenario), read strictly into validated configuration.
//
// Every mapping's keys are checked against core/scenario_schema.h; every value is read
// with its type, unit and range; errors are located (file:line:col, field path, expected
// vs got, did-you-mean). Sections are read by the layer that owns them: model, hardware
// and deployment through the fit reader (memory/fit_request.h), `workload` by
// workload/workload_spec.h, `slo` by metrics/slo.h, `engine.step_model` and
// `engine.cuda_graphs` by perf/factory.h. What this reader derives or defaults is listed
// in `derived`, which reaches the report.
// Thread model: value type; holds the parsed YAML document (for step_model) alive.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/hardware.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/engine/engine.h"
#include "fleetplan/fleet/adapters.h"
#include "fleetplan/fleet/admission.h"
#include "fleetplan/fleet/autoscaler.h"
#include "fleetplan/fleet/pools.h"
#include "fleetplan/fleet/prefix_placement.h"
#include "fleetplan/fleet/router.h"
#include "fleetplan/fleet/serve_faults.h"
#include "fleetplan/fleet/simulation.h"
#include "fleetplan/fleet/speculation.h"
#include "fleetplan/memory/fit.h"
#include "fleetplan/metrics/slo.h"
#include "fleetplan/perf/cuda_graphs.h"
#include "fleetplan/workload/workload_spec.h"

namespace fleetplan {

struct OutputSpec {
  std::string dir;         // where report.json and the other files go
  bool requests = false;   // requests.jsonl
  bool timeline = false;   // timeline.json
  Duration timeseries_interval = Ms(1000);  // report.json `timeseries`; zero: none (code only)
  bool html = true;        // report.html (written by the shell that renders it)
};

struct PrefixCacheSpec {
  bool enabled = false;
  std::string eviction = "lru";  // the free list's order (engine/kv_pool.h); "lru" only
};

// One entry of `workload.events`: a prefix-cache invalidation at a time. Tenant and
// adapter names are resolved against the workload's names when the run is built
// (ResolveInvalidations), with errors located at `node`.
struct InvalidationEventSpec {
  SimTime at;
  InvalidationKind kind = InvalidationKind::kModelRevision;
  std::optional<std::string> tenant;   // kTenant (required), kCorpus (optional: else all)
  std::optional<std::string> adapter;  // kAdapter (required)
  std::optional<YamlNode> node;  // the event entry, to locate errors found later
};


// One entry of deployment.pools, resolved: its role, its layout's fit and its size.
struct PoolSpec {
  PoolRole role = PoolRole::kMixed;
  FitRequest fit;
  int64_t replicas = 1;
};

// A file a scenario read besides itself (a user catalog): listed in report.json `inputs`.
struct ScenarioInput {
  std::string path;    // as resolved (relative to the working directory or absolute)
  std::string digest;  // "sha256:..." of its bytes
};

// What the command line adds to a scenario file.
struct ScenarioLoadOptions {
  // User catalog files (--catalog), read after the scenario's own `catalog:` files, so a
  // flag overrides an entry of the same name.
  std::vector<std::string> catalogs;
};

struct Scenario {
  // Provenance.
  std::string display_name;  // the file as the user named it, or "<built-in atlas>"
  std::string dir;           // folder that relative paths in the scenario resolve against
  std::string digest;        // sha256 of the scenario's bytes
  std::string name;
  uint64_t seed = 0;
  // The catalog every name (model, GPU, link) was resolved against: the built-in one plus
  // the user catalog files (`catalog:` then --catalog), which are listed here in order.
  std::shared_ptr<const Catalog> catalog;
  std::vector<ScenarioInput> catalog_files;

  // Model, GPU, layout, dtypes and memory knobs, resolved against the catalog. With
  // deployment.pools: the first serving (mixed or decode) pool's, and `replicas` counts
  // every pool's replicas.
  FitRequest fit;
  int64_t replicas = 1;
  // Every pool in the file's order; without deployment.pools one mixed pool of
  // `replicas` x `fit`.
  std::vector<PoolSpec> pools;
  // deployment.disaggregation and faults.kv_transfer (read only with a prefill pool).
  DisaggregationConfig disaggregation;
  ServeFaults serve_faults;  // faults.serve: read by `fleetplan serve` only
  LinkSpec transfer_link;
  int64_t nodes = 1;
  int64_t gpus_per_node = 8;
  LinkSpec intra_node_link;
  LinkSpec inter_node_link;

  EngineConfig engine;  // kv_blocks is 0 here: the memory plan sets it when the run is built
                        // engine.prefix_cache holds the cache settings and scope
  PrefixCacheSpec prefix_cache;
  std::vector<InvalidationEventSpec> events;  // workload.events, in time order
  CudaGraphPolicy cuda_graphs;
  // engine.step_model when given (read by perf/factory.h when the run is built).
  std::optional<YamlNode> step_model;
  SpeculationSpec speculation;  // engine.speculation (off when not given)

  RouterConfig router;
  ReplicationConfig replication;  // router.replication (off when not given)
  AdapterConfig adapters;  // engine.adapters (off when not given)
  AdmissionSpec admission;  // admission (off when not given)
  AutoscalingConfig autoscaling;  // autoscaling (off when not given)
  WorkloadSpec workload;
  SloSpec slo;
  OutputSpec output;

  std::vector<std::string> derived;  // defaults and derivations, one sentence each

  // Keeps the YAML document (and so step_model) alive.
  std::shared_ptr<const YamlDocument> document;
};

// `path` "-" reads the scenario from standard input (display name "<stdin>"; its relative
// paths resolve against the working directory).
Expected<Scenario> LoadScenario(const std::string& path, const ScenarioLoadOptions& options = {});
// Resolves `events` against the workload's tenant and adapter names: unknown names are
// located errors with a did-you-mean.
Expected<std::vector<TimedInvalidation>> ResolveInvalidations(const std::vector<InvalidationEventSpec>& events,
                                                             const WorkloadNames& names);
Expected<Scenario> LoadScenarioText(std::string_view text, std::string display_name, std::string dir,
                                    const ScenarioLoadOptions& options = {});
// A scenario from a loaded document (e.g. one with overrides: core/yaml.h WithOverrides);
// `digest` is its identity (for a file: the sha256 of its bytes).
Expected<Scenario> LoadScenarioDocument(std::shared_ptr<const YamlDocument> doc, std::string dir, std::string digest,
                                        const ScenarioLoadOptions& options = {});

// The built-in Atlas scenario: the reference example of the format, run by
// `fleetplan simulate` with no arguments and printed by `--print-scenario`.
std::string_view AtlasScenarioYaml();
Expected<Scenario> LoadAtlasScenario(const ScenarioLoadOptions& options = {});

}  // namespace fleetplan
