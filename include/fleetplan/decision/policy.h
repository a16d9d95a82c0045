// The plan's policy (docs/plan.md "Policy"): trusted requirements, separate from the
// evidence they judge and from the candidate that is judged. Nothing in it is derived
// from evidence; the plan never writes it.
//
//   version: 1
//   slo:        {interactive: {ttft: 600ms, itl_max: 150ms}, ...}   scenario `slo` format
//   attainment: {interactive: 0.99, ...}       each SLO class's required share of requests
//   coverage:   [interactive, document, research]   classes the workload evidence must hold
//   controls:   {tenant_cache_isolation: required, max_prompt_retention: 720h}
//   capacity:   {survive: largest-domain, headroom: 10%, budget: 400000/month,
//                verify: {loss_at: 2m, duration: 4m}}
//   simulation: {duration: 5m}                 the chosen fleet's run at peak
//   evidence:   {required: [inventory, price, benchmark, workload], max_age: {...},
//                trust: {benchmark: [keys/bench.pub]}}
//   gates:      {quantization: {...the quantization gate's policy (gates/quantization.h)}}
//   sensitivity: {peak_traffic: 2x, gpu_price: 30%, domain_smaller: 25%, ttft_tightened: 25%}
// Read strictly: unknown keys and bad values are located errors.
// Thread model: a value (holds its document alive).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/core/yaml.h"
#include "fleetplan/evidence/trust.h"
#include "fleetplan/metrics/slo.h"
#include "fleetplan/sweep/spec.h"

namespace fleetplan {

struct PolicyControls {
  bool tenant_cache_isolation = false;              // required: prefix cache never shared across tenants
  std::optional<Duration> max_prompt_retention;     // the deployment's declared retention must not exceed it
};

// A declared perturbation (decision/sensitivity.h): the registry row's name and its size.
struct SensitivityAsk {
  std::string name;
  double size = 0;  // a factor (peak_traffic) or a share (the others)
  std::optional<YamlNode> where;
};

struct Policy {
  std::string file;
  std::shared_ptr<const YamlDocument> document;
  SloSpec slo;
  std::optional<YamlNode> slo_node;
  AttainmentTargets attainment;  // SLO class -> share
  std::vector<std::string> coverage;
  PolicyControls controls;
  std::optional<YamlNode> capacity;  // survive, headroom, budget, verify: read by the capacity spec reader
  Duration simulation_duration = Sec(300);
  std::vector<std::string> required_kinds;
  EvidenceTrust trust;
  std::vector<std::pair<std::string, YamlNode>> gates;  // gate name -> its policy node
  std::vector<SensitivityAsk> sensitivity;
};

// `dir`: the policy's folder, which names its trusted key files; `bundle_root`, when set,
// the bundle folder those files must lie inside (core/contained_path.h).
Expected<Policy> ReadPolicy(std::shared_ptr<const YamlDocument> doc, const std::string& dir,
                            const std::string& bundle_root = "");

}  // namespace fleetplan
