#include "fleetplan/fleet/router.h"

#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

class RoundRobin final : public Router {
 public:
  std::string_view name() const override { return "round-robin"; }
  int32_t Route(const Request&, std::span<const ReplicaView> view) override {
    const auto n = static_cast<int64_t>(view.size());
    return static_cast<int32_t>(next_++ % n);
  }

 private:
  int64_t next_ = 0;
};

// Fewest outstanding tokens (the work a replica still owes, as the router sees it).
// Ties rotate from the replica after the previous choice.
class LeastOutstanding final : public Router {
 public:
  std::string_view name() const override { return "least-outstanding"; }
  int32_t Route(const Request&, std::span<const ReplicaView> view) override {
    const auto n = static_cast<int32_t>(view.size());
    int32_t best = -1;
    int64_t best_tokens = 0;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t i = (start_ + k) % n;
      const int64_t t = view[static_cast<size_t>(i)].outstanding_tokens();
      if (best < 0 || t < best_tokens) {
        best = i;
        best_tokens = t;
      }
    }
    start_ = (best + 1) % n;
    return best;
  }

 private:
  int32_t start_ = 0;
};

}  // namespace

const std::vector<std::string>& RouterNames() {
  static const std::vector<std::string> names = {"round-robin", "least-outstanding"};
  return names;
}

Expected<std::unique_ptr<Router>> MakeRouter(const RouterConfig& config) {
  if (config.policy == "round-robin") return std::unique_ptr<Router>(new RoundRobin());
  if (config.policy == "least-outstanding") return std::unique_ptr<Router>(new LeastOutstanding());
  return InvalidInput(UnknownNameMessage("router policy", config.policy, RouterNames()));
}

}  // namespace fleetplan
