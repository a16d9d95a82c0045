// Building a FitRequest from what a user wrote: a scenario file, command-line flags, or
// both (flags override the scenario). Every value remembers where it came from, so that a
// bad value — including one only found bad in combination, like a tp that does not divide
// the heads — is reported at its flag or at its file:line:col.
//
// From a scenario (spec/scenario-v1.yaml) fit reads only what it needs:
//   model.{name | spec, weight_dtype, kv_dtype, kv_window, max_context}
//   hardware.{gpu, gpu_memory}
//   deployment.{tp, pp, ep, gpu_memory_utilization}   (or one entry of deployment.pools)
//   engine.kv.block_tokens
//   engine.scheduler.{max_running -> concurrency, max_batched_tokens}
// Each value is read strictly (types, ranges, units). Keys are checked on the maps on the
// way to those values (the root, model, hardware, deployment, engine, engine.scheduler,
// engine.kv) against core/scenario_schema.h; the other sections are not interpreted.
// Thread model: value types and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/dtype.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/memory/fit.h"

namespace fleetplan {

// Where a value came from: a flag (path "--tp", empty location) or a YAML node (its
// location and dotted path).
struct ValueOrigin {
  SourceLocation where;
  std::string path;

  static ValueOrigin Flag(std::string flag);
};

// A located InvalidInput about the value at `origin`; a usage error when the value came
// from a command-line flag (core/flag_error.h).
Status ErrorAt(const ValueOrigin& origin, std::string_view message);

template <typename T>
struct Sourced {
  std::optional<T> value;
  ValueOrigin origin;

  void Set(T v, ValueOrigin o) {
    value = std::move(v);
    origin = std::move(o);
  }
};

// The user's fit inputs before catalog lookup; absent values get defaults in ResolveFitSpec.
struct FitSpec {
  Sourced<std::string> model_name;
  Sourced<ModelSpec> model_spec;  // an inline spec; wins over model_name when both are set
  Sourced<std::string> gpu_name;
  Sourced<Bytes> gpu_memory;      // overrides the catalog GPU's memory
  Sourced<int64_t> tp;
  Sourced<int64_t> pp;
  Sourced<int64_t> ep;
  Sourced<DType> weight_dtype;
  Sourced<DType> kv_dtype;
  // A set value of nullopt means "full context" was asked for explicitly.
  Sourced<std::optional<int64_t>> kv_window;
  Sourced<double> gpu_memory_utilization;
  Sourced<int64_t> context;
  Sourced<int64_t> concurrency;
  Sourced<int64_t> block_tokens;
  Sourced<int64_t> max_batched_tokens;
  // Read from a scenario: an absent engine.scheduler.max_running is the engine's default
  // (kDefaultMaxRunning), not the fit verb's one sequence, so the fit and the simulated
  // engine agree on the concurrency.
  bool from_scenario = false;
};

// Reads a scenario file. `pool_role` selects one entry of deployment.pools (by `role`);
// it must be empty when the scenario has no pools, and may be empty when it has one.
// `pool_origin` locates errors about the role (e.g. the --pool flag).
Expected<FitSpec> ReadFitScenario(const std::string& path, const std::string& pool_role,
                                  const ValueOrigin& pool_origin);
// The same, from a loaded document (tests, or a caller that already holds the scenario).
Expected<FitSpec> ReadFitScenario(const YamlDocument& doc, const std::string& pool_role,
                                  const ValueOrigin& pool_origin);

struct ResolvedFit {
  FitRequest request;
  // What was defaulted or overridden, one line each ("context 131072: the model's
  // max_context (not given)"), listed in the output.
  std::vector<std::string> derived;
};

// Looks the model and GPU up in `catalog`, fills defaults, and validates the whole request;
// every error is located at the origin of the value at fault.
Expected<ResolvedFit> ResolveFitSpec(const FitSpec& spec, const Catalog& catalog);

// Ok when the request's weight and KV formats are ones its GPU has natively (the check
// layout makes, catalog/native_dtype.h); else that error, located at the format's origin
// in `spec`. `fit` and every scenario require it; the quantization gate does not, since
// it judges a format's fallback on a GPU without it.
Status CheckNativeFormats(const FitSpec& spec, const FitRequest& request);

// Default formats (fit, layout and scenarios agree): the checkpoint's own for weights
// (`native_dtype`); KV in the activation format, i.e. the checkpoint's when it is 16 bits
// or wider, else bf16 (vLLM's kv_cache_dtype "auto").
DType DefaultKvDType(const ModelSpec& m);

}  // namespace fleetplan
