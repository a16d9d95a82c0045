// Open-loop arrival processes (arrival.h): small strategy objects, one factory table.
#include "fleetplan/workload/arrival.h"

#include <algorithm>
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

// Poisson with a piecewise-constant rate: unit-rate exponential gaps on the "operational
// time" axis u (expected arrivals so far), mapped to real time through the inverse of
// the cumulative rate Λ(t), which is linear inside each segment:
//   segment k: [start_k, start_k+1) at rate_k;  Λ(start_k+1) = Λ(start_k) + rate_k × length
//   t(u) = start_k + (u − Λ(start_k)) / rate_k   for the segment with Λ(start_k) <= u
// A segment of rate 0 is a pause; a last segment of rate 0 ends the arrivals.
class ScheduledPoissonArrivals final : public ArrivalProcess {
 public:
  ScheduledPoissonArrivals(Exponential unit, std::vector<RateStep> steps)
      : unit_(unit), steps_(std::move(steps)) {}
  SimTime Next(RngStream& rng) override {
    u_ += unit_.Sample(rng);
    while (k_ + 1 < steps_.size()) {
      const double length_s = static_cast<double>(steps_[k_ + 1].at.ns() - steps_[k_].at.ns()) / 1e9;
      const double next = lambda_ + steps_[k_].rate.per_second * length_s;
      if (next > u_) break;
      lambda_ = next;
      ++k_;
    }
    const RateStep& step = steps_[k_];
    if (!(step.rate.per_second > 0)) return SimTime::FromNanos(kMaxTimeNs);  // the last segment pauses for good
    const double offset_ns = (u_ - lambda_) / step.rate.per_second * 1e9;
    const double at = static_cast<double>(step.at.ns()) + offset_ns;
    if (!(at < static_cast<double>(kMaxTimeNs))) return SimTime::FromNanos(kMaxTimeNs);
    return SimTime::FromNanos(std::max(step.at.ns(), static_cast<int64_t>(std::llround(at))));
  }
  std::unique_ptr<ArrivalProcess> Clone() const override {
    return std::make_unique<ScheduledPoissonArrivals>(unit_, steps_);
  }
  // The rate the schedule settles on.
  double MeanRate() const override { return steps_.back().rate.per_second; }
  Json Describe() const override {
    Json schedule = Json::array();
    for (size_t i = 1; i < steps_.size(); ++i) {
      schedule.push_back({{"at", FormatDuration(steps_[i].at - SimTime())}, {"rate_per_s", steps_[i].rate.per_second}});
    }
    return {{"process", "poisson"}, {"rate_per_s", steps_[0].rate.per_second}, {"schedule", std::move(schedule)}};
  }

 private:
  Exponential unit_;
  std::vector<RateStep> steps_;  // steps_[0] at 0: the base rate
  size_t k_ = 0;                 // the segment of the last arrival
  double lambda_ = 0;            // Λ(start of segment k_)
  double u_ = 0;                 // operational time of the last arrival
};

// arrival.schedule: [{at: 2m, rate: 30/s}, ...], times increasing and > 0, rates >= 0.
Expected<std::vector<RateStep>> ReadSchedule(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(std::vector<YamlNode> items, node.Items());
  if (items.empty()) return node.Error("expected at least one step, e.g. [{at: 2m, rate: 30/s}]");
  std::vector<RateStep> steps;
  for (const YamlNode& item : items) {
    FP_RETURN_IF_ERROR(item.CheckKeys({"at", "rate"}));
    FP_ASSIGN_OR_RETURN(Duration at, item["at"].AsDuration());
    const Duration last = steps.empty() ? Duration() : steps.back().at - SimTime();
    if (at <= last) {
      return item["at"].Error(fmt::format("expected a time after {} (steps in increasing time, after 0), got {}",
                                          FormatDuration(last), FormatDuration(at)));
    }
    FP_ASSIGN_OR_RETURN(Rate rate, item["rate"].AsRate());
    if (!(rate.per_second >= 0) || !std::isfinite(rate.per_second)) {
      return item["rate"].Error(fmt::format("expected a rate >= 0, got {}/s", rate.per_second));
    }
    steps.push_back(RateStep{SimTime() + at, rate});
  }
  return steps;
}

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
         FP_RETURN_IF_ERROR(n.CheckKeys({"process", "rate", "schedule"}));
         FP_ASSIGN_OR_RETURN(Rate rate, ReadRate(n));
         if (!n["schedule"].present()) return LocatedAt(n, MakePoissonArrivals(rate));
         FP_ASSIGN_OR_RETURN(std::vector<RateStep> schedule, ReadSchedule(n["schedule"]));
         return LocatedAt(n, MakeScheduledPoissonArrivals(rate, std::move(schedule)));
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
         FP_ASSIGN_OR_RETURN(Duration on, n["on"].AsPositiveDuration());
         FP_ASSIGN_OR_RETURN(Duration off, n["off"].AsDuration());
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

Expected<std::unique_ptr<ArrivalProcess>> MakeScheduledPoissonArrivals(Rate rate, std::vector<RateStep> schedule) {
  FP_RETURN_IF_ERROR(CheckRate(rate));
  std::vector<RateStep> steps = {RateStep{SimTime(), rate}};
  for (const RateStep& step : schedule) {
    if (step.at <= steps.back().at) return InvalidInput("expected schedule steps in increasing time, after 0");
    if (!(step.rate.per_second >= 0) || !std::isfinite(step.rate.per_second)) {
      return InvalidInput(fmt::format("expected a schedule rate >= 0, got {}/s", step.rate.per_second));
    }
    steps.push_back(step);
  }
  FP_ASSIGN_OR_RETURN(Exponential unit, Exponential::Make(1.0));
  return std::unique_ptr<ArrivalProcess>(std::make_unique<ScheduledPoissonArrivals>(unit, std::move(steps)));
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
