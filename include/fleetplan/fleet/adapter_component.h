// Adapters: per-replica LoRA residency as a fleet component (engine.adapters; off by
// default, when adapters load instantly and take no memory).
//
// A request that names an adapter acquires it on the replica it is routed to (a cold
// load delays its start: OnRouted returns when the adapter is ready) and releases it
// when it ends. The router believes an adapter resident where it was resident at the
// last telemetry refresh or was sent since (router.precise: where it truly is).
// With `router.adapter_aware.by: popularity` the adapters are placed as the partition
// planned from the workload's declared popularity (adapters.h PartitionByPopularity over
// the initial replicas): each replica starts with its adapters loaded, and the router sees
// where each adapter is placed. Whatever the policy, when the workload declares adapter
// popularity the report states that partition: report.json `adapters.placement`
// {by, hot, warm, tail, memory_budget, per_replica: [{replica, adapters, bytes}],
// max_bytes, fits_budget}, next to what residency did (`replicas[i].adapters`).
// Report: `replicas[i].adapters` (AdapterStats::ToJson).
// Invariant: each replica's pins equal the live requests routed there with an adapter.
// Thread model: single-threaded; deterministic (sorted vectors and ordered maps).
#pragma once

#include <optional>
#include <vector>

#include "fleetplan/fleet/adapters.h"
#include "fleetplan/fleet/component.h"

namespace fleetplan {

// The registry row (component.h) and its FleetSetup::components entry.
inline constexpr std::string_view kAdaptersRow = "adapters";

class AdapterComponent final : public FleetComponent {
 public:
  explicit AdapterComponent(Simulation& sim);
  std::string_view name() const override { return "adapters"; }
  const AdapterResidency& residency(int32_t replica) const { return residency_[static_cast<size_t>(replica)]; }

  Status OnReplicaAdded(int32_t id) override;
  void FillView(const Request& r, int32_t replica, ReplicaView& view) override;
  SimTime OnRouted(const Request& r, int32_t replica, SimTime now, RouteInfo& info) override;
  void OnTelemetryRefresh(int32_t replica, ReplicaTelemetry& t) override;
  void OnRequestEnded(RequestId id, const RouteInfo& info) override;
  Status CheckInvariants() const override;
  void AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) override;
  void AddReport(Duration span, Json& report) const override;

 private:
  bool BelievesResident(int32_t replica, AdapterId adapter) const;

  Simulation& sim_;
  const AdapterConfig& config_;  // FleetSetup::components, row kAdaptersRow
  std::optional<AdapterPartition> partition_;  // from declared popularity
  bool by_popularity_ = false;                 // the router places by the partition
  std::vector<AdapterResidency> residency_;            // per replica
  std::vector<std::vector<AdapterId>> snapshot_;       // resident at the last refresh, sorted
  std::vector<std::vector<AdapterId>> sent_;           // sent since the refresh
};

}  // namespace fleetplan
