#include "fleetplan/fleet/invalidations.h"

#include "fleetplan/fleet/simulation.h"
#include <algorithm>
#include "fleet/section_readers.h"

namespace fleetplan {

void Invalidations::OnStart(SimTime now) {
  (void)now;
  const auto& list = *sim_.setup().components.Find<std::vector<TimedInvalidation>>(kInvalidationsRow);
  for (size_t i = 0; i < list.size(); ++i) {
    sim_.queue().Push(list[i].at, this, 0, -1, static_cast<int64_t>(i), /*passive=*/true);
  }
}

void Invalidations::OnEvent(const Event& e) {
  const CacheInvalidation& inv =
      (*sim_.setup().components.Find<std::vector<TimedInvalidation>>(kInvalidationsRow))[static_cast<size_t>(e.request)]
          .invalidation;
  for (int32_t i = 0; i < sim_.replica_count(); ++i) sim_.engine(i).Invalidate(inv);
}

// ---- the section reader ----------------------------------------------------------

namespace section {

Expected<InvalidationEventSpec> ReadEvent(const YamlNode& node) {
  FP_RETURN_IF_ERROR(node.CheckKeys(keys::kWorkloadEvent));
  FP_ASSIGN_OR_RETURN(Duration at, node["at"].AsDuration());
  FP_ASSIGN_OR_RETURN(std::string name, node["invalidate"].AsString());
  const auto& names = InvalidationKindNames();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return node["invalidate"].Error(UnknownNameMessage("invalidation", name, names));
  const auto kind = static_cast<InvalidationKind>(it - names.begin());
  const bool takes_tenant = kind == InvalidationKind::kTenant || kind == InvalidationKind::kCorpus;
  const bool takes_adapter = kind == InvalidationKind::kAdapter;
  std::optional<std::string> tenant;
  std::optional<std::string> adapter;
  if (node["tenant"].present()) {
    if (!takes_tenant) {
      return node["tenant"].Error(fmt::format("`tenant` applies to invalidate: tenant or corpus, not {}", name));
    }
    FP_ASSIGN_OR_RETURN(tenant, node["tenant"].AsString());
  } else if (kind == InvalidationKind::kTenant) {
    return node["tenant"].AsString().status();  // "missing required field 'tenant'"
  }
  if (node["adapter"].present()) {
    if (!takes_adapter) {
      return node["adapter"].Error(fmt::format("`adapter` applies to invalidate: adapter, not {}", name));
    }
    FP_ASSIGN_OR_RETURN(adapter, node["adapter"].AsString());
  } else if (takes_adapter) {
    return node["adapter"].AsString().status();
  }
  return InvalidationEventSpec{SimTime() + at, kind, std::move(tenant), std::move(adapter), node};
}

// workload.events (the workload reader accepts the key; the cache's events are read here).
Status ReadEvents(const YamlNode& node, Scenario& s) {
  if (!node.present() || node.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(auto items, node.Items());
  for (const YamlNode& item : items) {
    FP_ASSIGN_OR_RETURN(InvalidationEventSpec e, ReadEvent(item));
    s.events.push_back(std::move(e));
  }
  std::stable_sort(s.events.begin(), s.events.end(),
                   [](const InvalidationEventSpec& a, const InvalidationEventSpec& b) { return a.at < b.at; });
  if (!s.events.empty() && !s.engine.prefix_cache.enabled) {
    s.derived.push_back(fmt::format("workload.events: {} invalidation(s) have no effect: engine.prefix_cache is "
                                    "disabled",
                                    s.events.size()));
  }
  return Status::Ok();
}

}  // namespace section

Expected<std::vector<TimedInvalidation>> ResolveInvalidations(const std::vector<InvalidationEventSpec>& events,
                                                             const WorkloadNames& names) {
  const auto resolve = &section::ResolveWorkloadName;
  std::vector<TimedInvalidation> out;
  for (const InvalidationEventSpec& e : events) {
    CacheInvalidation inv{e.kind, kAllTargets};
    if (e.tenant) {
      FP_ASSIGN_OR_RETURN(inv.target, resolve((*e.node)["tenant"], *e.tenant, names.tenants, "tenant"));
    }
    if (e.adapter) {
      FP_ASSIGN_OR_RETURN(inv.target, resolve((*e.node)["adapter"], *e.adapter, names.adapters, "adapter"));
    }
    out.push_back({e.at, inv});
  }
  return out;
}

}  // namespace fleetplan
