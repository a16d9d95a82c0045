// Open-loop arrival processes (arrival.h): small strategy objects, one factory table.
#include "fleetplan/workload/arrival.h"

#include <cmath>
#include <functional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/core/distributions.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan {
namespace {

Status CheckRate(Rate rate) {
  if (!(rate.per_second > 0) || !std::isfinite(rate.per_second)) {
    return InvalidInput(fmt::format("expected a positive rate, got {}/s", rate.per_second));
  }
  return Status::Ok();
}

// A renewal process: i.i.d. gaps drawn from a distribution with Sample(rng) in seconds.
template <typename Gap>
class RenewalArrivals final : public ArrivalProcess {
 public:
  RenewalArrivals(Gap gap, double rate, Json description)
      : gap_(std::move(gap)), rate_(rate), description_(std::move(description)) {}
  SimTime Next(RngStream& rng) override {
    // A vanishing rate draws gaps of "never": saturate at the end of time (kMaxTimeNs),
    // past any run's horizon, rather than overflow.
    now_ = SaturatedAdd(now_, SaturatedSeconds(gap_.Sample(rng)));
    return now_;
  }
  std::unique_ptr<ArrivalProcess> Clone() const override {
    return std::make_unique<RenewalArrivals>(gap_, rate_, description_);
  }
  double MeanRate() const override { return rate_; }
  Json Describe() const override { return description_; }

 private:
  Gap gap_;
  double rate_;
  Json description_;
  SimTime now_;
};

class ConstantArrivals final : public ArrivalProcess {
 public:
  explicit ConstantArrivals(double rate) : rate_(rate) {}
  SimTime Next(RngStream& rng) override {
    (void)rng;
    ++count_;
    const double ns = static_cast<double>(count_) * 1e9 / rate_;
    if (!(ns < static_cast<double>(kMaxTimeNs))) return SimTime::FromNanos(kMaxTimeNs);  // "never"
    return SimTime::FromNanos(std::llround(ns));
  }
  std::unique_ptr<ArrivalProcess> Clone() const override { return std::make_unique<ConstantArrivals>(rate_); }
  double MeanRate() const override { return rate_; }
  Json Describe() const override { return {{"process", "constant"}, {"rate_per_s", rate_}}; }

 private:
  double rate_;
  int64_t count_ = 0;
};

// Poisson on the "on-time" axis u, mapped to real time by inserting an off window after
// every `on` of on-time: real(u) = u + floor(u / on) * off.
class OnOffArrivals final : public ArrivalProcess {
 public:
  OnOffArrivals(Exponential gap, double rate, Duration on, Duration off)
      : gap_(gap), rate_(rate), on_(on), off_(off) {}
  SimTime Next(RngStream& rng) override {
    on_time_ = SaturatedAdd(on_time_, SaturatedSeconds(gap_.Sample(rng)));
    const int64_t windows = on_time_.ns() / on_.ns();
    int64_t off_total = 0;
    if (__builtin_mul_overflow(windows, off_.ns(), &off_total)) return SimTime::FromNanos(kMaxTimeNs);
    return SaturatedAdd(on_time_, Duration::Nanos(off_total));
  }
  std::unique_ptr<ArrivalProcess> Clone() const override {
    return std::make_unique<OnOffArrivals>(gap_, rate_, on_, off_);
  }
  double MeanRate() const override {
    return rate_ * on_.seconds() / (on_.seconds() + off_.seconds());
  }
  Json Describe() const override {
    return {{"process", "on-off"}, {"rate_per_s", rate_}, {"on", FormatDuration(on_)},
            {"off", FormatDuration(off_)}};
  }

 private:
  Exponential gap_;
  double rate_;
  Duration on_, off_;
  SimTime on_time_;
};

Status AtNode(const YamlNode& node, Status status) {
  if (status.ok()) return status;
  return node.Error(status.message());
}

Expected<Rate> ReadRate(const YamlNode& arrival) {
  FP_ASSIGN_OR_RETURN(Rate rate, arrival["rate"].AsRate());
  FP_RETURN_IF_ERROR(AtNode(arrival["rate"], CheckRate(rate)));
  return rate;
}

template <typename T>
Expected<T> LocatedAt(const YamlNode& node, Expected<T> made) {
  if (!made.ok()) return node.Error(made.status().message());
  return made;
}

using OpenLoopParser = std::function<Expected<std::unique_ptr<ArrivalProcess>>(const YamlNode&)>;

struct OpenLoopEntry {
  std::string_view name;
  OpenLoopParser parse;
};

const std::vector<OpenLoopEntry>& OpenLoopTable() {
  static const std::vector<OpenLoopEntry> table = {
      {"poisson",
       [](const YamlNode& n) -> Expected<std::unique_ptr<ArrivalProcess>> {
         FP_RETURN_IF_ERROR(n.CheckKeys({"process", "rate"}));
         FP_ASSIGN_OR_RETURN(Rate rate, ReadRate(n));
         return LocatedAt(n, MakePoissonArrivals(rate));
       }},
      {"gamma",
       [](const YamlNode& n) -> Expected<std::unique_ptr<ArrivalProcess>> {
         FP_RETURN_IF_ERROR(n.CheckKeys({"process", "rate", "cv"}));
         FP_ASSIGN_OR_RETURN(Rate rate, ReadRate(n));
         FP_ASSIGN_OR_RETURN(double cv, n["cv"].AsDouble());
         return LocatedAt(n["cv"], MakeGammaArrivals(rate, cv));
       }},
      {"constant",
       [](const YamlNode& n) -> Expected<std::unique_ptr<ArrivalProcess>> {
         FP_RETURN_IF_ERROR(n.CheckKeys({"process", "rate"}));
         FP_ASSIGN_OR_RETURN(Rate rate, ReadRate(n));
         return LocatedAt(n, MakeConstantArrivals(rate));
       }},
      {"on-off",
       [](const YamlNode& n) -> Expected<std::unique_ptr<ArrivalProcess>> {
         FP_RETURN_IF_ERROR(n.CheckKeys({"process", "rate", "on", "off"}));
         FP_ASSIGN_OR_RETURN(Rate rate, ReadRate(n));
         FP_ASSIGN_OR_RETURN(Duration on, n["on"].AsDuration());
         FP_ASSIGN_OR_RETURN(Duration off, n["off"].AsDuration());
         if (on <= Duration()) return n["on"].Error("expected a positive duration, got 0");
         return LocatedAt(n, MakeOnOffArrivals(rate, on, off));
       }},
  };
  return table;
}

}  // namespace

Expected<std::unique_ptr<ArrivalProcess>> MakePoissonArrivals(Rate rate) {
  FP_RETURN_IF_ERROR(CheckRate(rate));
  FP_ASSIGN_OR_RETURN(Exponential gap, Exponential::Make(1.0 / rate.per_second));
  Json d = {{"process", "poisson"}, {"rate_per_s", rate.per_second}};
  return std::unique_ptr<ArrivalProcess>(
      std::make_unique<RenewalArrivals<Exponential>>(gap, rate.per_second, std::move(d)));
}

Expected<std::unique_ptr<ArrivalProcess>> MakeGammaArrivals(Rate rate, double cv) {
  FP_RETURN_IF_ERROR(CheckRate(rate));
  FP_ASSIGN_OR_RETURN(Gamma gap, Gamma::Make(1.0 / rate.per_second, cv));
  Json d = {{"process", "gamma"}, {"rate_per_s", rate.per_second}, {"cv", cv}};
  return std::unique_ptr<ArrivalProcess>(
      std::make_unique<RenewalArrivals<Gamma>>(gap, rate.per_second, std::move(d)));
}

Expected<std::unique_ptr<ArrivalProcess>> MakeConstantArrivals(Rate rate) {
  FP_RETURN_IF_ERROR(CheckRate(rate));
  return std::unique_ptr<ArrivalProcess>(std::make_unique<ConstantArrivals>(rate.per_second));
}

Expected<std::unique_ptr<ArrivalProcess>> MakeOnOffArrivals(Rate rate, Duration on, Duration off) {
  FP_RETURN_IF_ERROR(CheckRate(rate));
  if (on <= Duration()) return InvalidInput("expected a positive `on` duration");
  if (off < Duration()) return InvalidInput("expected a non-negative `off` duration");
  FP_ASSIGN_OR_RETURN(Exponential gap, Exponential::Make(1.0 / rate.per_second));
  return std::unique_ptr<ArrivalProcess>(std::make_unique<OnOffArrivals>(gap, rate.per_second, on, off));
}

const std::vector<std::string>& ArrivalModeNames() {
  static const std::vector<std::string> names = {"poisson", "gamma",       "constant",
                                                 "on-off",  "closed-loop", "trace"};
  return names;
}

Expected<std::unique_ptr<ArrivalProcess>> ParseOpenLoopArrivals(const YamlNode& arrival_node) {
  if (!arrival_node.IsMap()) {
    return arrival_node.Error(fmt::format("expected a map such as {{process: poisson, rate: 8/s}}, got {}",
                                          QuoteValue(arrival_node.Text())));
  }
  const YamlNode process = arrival_node["process"];
  FP_ASSIGN_OR_RETURN(std::string name, process.AsString());
  for (const OpenLoopEntry& entry : OpenLoopTable()) {
    if (entry.name == name) return entry.parse(arrival_node);
  }
  return process.Error(UnknownNameMessage("arrival process", name, ArrivalModeNames()));
}

}  // namespace fleetplan
