#include "fleetplan/fleet/adapter_component.h"

#include <algorithm>

#include <fmt/format.h>

#include "fleetplan/fleet/simulation.h"
#include <cmath>
#include "fleet/section_readers.h"

namespace fleetplan {

AdapterComponent::AdapterComponent(Simulation& sim)
    : sim_(sim), config_(*sim.setup().components.Find<AdapterConfig>(kAdaptersRow)) {
  const FleetSetup& setup = sim_.setup();
  if (!config_.popularity.empty()) {
    const AdapterAwareWeights& w = setup.router.adapter_aware;
    const auto replicas = static_cast<int32_t>(std::max<size_t>(1, setup.replicas.size()));
    partition_ = PartitionByPopularity(config_.popularity, replicas, w.hot, w.warm);
    by_popularity_ = setup.router.policy == "adapter-aware" && w.by == AdapterPlacementBy::kPopularity;
  }
}

Status AdapterComponent::OnReplicaAdded(int32_t id) {
  residency_.emplace_back(config_);
  snapshot_.emplace_back();
  sent_.emplace_back();
  if (by_popularity_) {
    AdapterResidency& r = residency_.back();
    for (AdapterId a : partition_->on[static_cast<size_t>(id) % partition_->on.size()]) r.Preload(a);
    r.AppendResident(&snapshot_.back());
  }
  return Status::Ok();
}

bool AdapterComponent::BelievesResident(int32_t replica, AdapterId a) const {
  const auto i = static_cast<size_t>(replica);
  if (sim_.setup().router.precise) return residency_[i].resident(a);
  const auto& sent = sent_[i];
  return std::binary_search(snapshot_[i].begin(), snapshot_[i].end(), a) ||
         std::find(sent.begin(), sent.end(), a) != sent.end();
}

void AdapterComponent::FillView(const Request& r, int32_t replica, ReplicaView& view) {
  if (r.adapter == kNoAdapter) return;
  view.adapter_resident = BelievesResident(replica, r.adapter);
  if (by_popularity_) view.adapter_planned = partition_->places(replica, r.adapter);
}

SimTime AdapterComponent::OnRouted(const Request& r, int32_t replica, SimTime now, RouteInfo& info) {
  if (r.adapter == kNoAdapter) return now;
  const auto i = static_cast<size_t>(replica);
  sent_[i].push_back(r.adapter);
  info.adapter = r.adapter;
  const SimTime ready = residency_[i].Acquire(r.adapter, now);
  info.adapter_wait = ready - now;
  return ready;
}

void AdapterComponent::OnTelemetryRefresh(int32_t replica, ReplicaTelemetry& t) {
  (void)t;
  const auto i = static_cast<size_t>(replica);
  sent_[i].clear();
  snapshot_[i].clear();
  residency_[i].AppendResident(&snapshot_[i]);
}

void AdapterComponent::OnRequestEnded(RequestId id, const RouteInfo& info) {
  (void)id;
  if (info.adapter == kNoAdapter) return;
  const auto i = static_cast<size_t>(info.replica);
  residency_[i].Release(info.adapter);
}

Status AdapterComponent::CheckInvariants() const {
  // Recounted from the live routes: each pins its adapter on its replica until it ends.
  std::vector<int64_t> live(residency_.size(), 0);
  sim_.ForEachRoute([&](RequestId, const RouteInfo& info) {
    if (info.adapter != kNoAdapter) ++live[static_cast<size_t>(info.replica)];
  });
  for (size_t i = 0; i < residency_.size(); ++i) {
    if (residency_[i].pins() != live[i]) {
      return InternalError(fmt::format("replica {} pins {} adapters for {} live requests that named one", i,
                                       residency_[i].pins(), live[i]));
    }
  }
  return Status::Ok();
}

void AdapterComponent::AddReport(Duration span, Json& report) const {
  (void)span;
  if (!partition_) return;
  const AdapterConfig& config = config_;
  Json per_replica = Json::array();
  int64_t most = 0;
  for (size_t i = 0; i < partition_->on.size(); ++i) {
    const auto n = static_cast<int64_t>(partition_->on[i].size());
    most = std::max(most, n);
    per_replica.push_back(
        {{"replica", static_cast<int64_t>(i)}, {"adapters", n}, {"bytes", (config.size * n).count()}});
  }
  const AdapterAwareWeights& w = sim_.setup().router.adapter_aware;
  Json placement = {{"by", by_popularity_ ? "popularity" : "history"},
                    {"hot", partition_->hot},
                    {"warm", partition_->warm},
                    {"tail", partition_->tail},
                    {"hot_share", w.hot},
                    {"warm_share", w.warm},
                    {"per_replica", per_replica},
                    {"memory_budget", config.memory_budget.count()},
                    {"max_bytes", (config.size * most).count()},
                    {"fits_budget", config.size * most <= config.memory_budget}};
  report["adapters"] = {{"placement", placement}};
}

void AdapterComponent::AddReplicaReport(int32_t id, Duration span, Json& figures, Json& engine) {
  (void)engine;
  AdapterResidency& a = residency_[static_cast<size_t>(id)];
  a.Advance(sim_.now());
  figures["adapters"] = a.stats().ToJson(span, a.resident_count());
}

// ---- the section reader ----------------------------------------------------------

namespace section {

// Host-to-device bandwidth an adapter load is derived from when `load_time` is not given:
// PCIe 5.0 x16 delivers about 50 GB/s one way; half of it is a conservative effective rate.
constexpr double kAdapterLoadBytesPerSecond = 25e9;

Status ReadAdapters(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kAdapters));
  AdapterConfig& a = s.adapters;
  a.enabled = true;
  FP_ASSIGN_OR_RETURN(a.size, node["size"].AsBytes());
  if (a.size.count() < 1) return node["size"].Error("expected a size > 0");
  FP_ASSIGN_OR_RETURN(a.memory_budget, node["memory_budget"].AsBytes());
  if (a.memory_budget < a.size) {
    return node["memory_budget"].Error(fmt::format("expected at least one adapter's size ({} bytes), got {} bytes",
                                                   a.size.count(), a.memory_budget.count()));
  }
  if (node["load_time"].present()) {
    FP_ASSIGN_OR_RETURN(a.load_time, node["load_time"].AsDuration());
  } else {
    a.load_time = Duration::Nanos(static_cast<int64_t>(
        std::ceil(static_cast<double>(a.size.count()) / kAdapterLoadBytesPerSecond * 1e9)));
    s.derived.push_back(fmt::format("engine.adapters.load_time: {:.3f} ms (size / 25 GB/s host-to-device; not "
                                    "given)",
                                    a.load_time.millis()));
  }
  return Status::Ok();
}

}  // namespace section

}  // namespace fleetplan
