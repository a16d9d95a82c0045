#include "sweep/partial_check.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "sweep/sweep_limits.h"

namespace fleetplan::sweep_internal {
namespace {

// A value as a message shows it: scalars as written (cut), collections by kind.
std::string Shown(const Json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  const std::string text = v.dump();
  return text.size() <= 40 ? text : text.substr(0, 40) + "...";
}

bool IsCount(const Json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

// A figure: a finite number in [lo, hi].
std::optional<std::string> Figure(const Json& v, std::string_view field, double lo = 0, double hi = kMaxPartialFigure) {
  if (!v.is_number()) return fmt::format("{}: expected a number, got {}", field, Shown(v));
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return fmt::format("{}: expected a number in [{:g}, {:g}], got {}", field, lo, hi, Shown(v));
  }
  return std::nullopt;
}

std::optional<std::string> OptionalFigure(const Json& v, std::string_view field, double lo = 0,
                                          double hi = kMaxPartialFigure) {
  return v.is_null() ? std::nullopt : Figure(v, field, lo, hi);
}

std::optional<std::string> CountField(const Json& obj, std::string_view key, std::string_view field) {
  const auto it = obj.find(key);
  if (it == obj.end()) return fmt::format("{}: missing", field);
  if (!IsCount(*it) || it->get<double>() > kMaxPartialFigure) {
    return fmt::format("{}: expected an integer in [0, {:g}], got {}", field, kMaxPartialFigure, Shown(*it));
  }
  return std::nullopt;
}

// The per-class and fleet figures of an `ok` row (point.cc FiguresJson).
std::optional<std::string> CheckFigures(const Json& row) {
  const auto classes = row.find("classes");
  if (classes == row.end() || !classes->is_object()) return "classes: expected an object of classes";
  for (auto it = classes->begin(); it != classes->end(); ++it) {
    const std::string at = fmt::format("classes.{}", it.key());
    if (!it->is_object()) return fmt::format("{}: expected an object, got {}", at, Shown(*it));
    if (auto e = CountField(*it, "requests", at + ".requests")) return e;
    for (auto f = it->begin(); f != it->end(); ++f) {
      if (f.key() == "requests") continue;
      const std::string field = fmt::format("{}.{}", at, f.key());
      const double hi = f.key() == "attainment" ? 1.0 : kMaxPartialFigure;
      if (auto e = OptionalFigure(*f, field, 0, hi)) return e;
    }
  }
  const auto fleet = row.find("fleet");
  if (fleet == row.end() || !fleet->is_object()) return "fleet: expected an object";
  if (auto e = CountField(*fleet, "requests", "fleet.requests")) return e;
  for (auto f = fleet->begin(); f != fleet->end(); ++f) {
    const std::string field = fmt::format("fleet.{}", f.key());
    if (f.key() == "requests") continue;
    if (f.key() == "meets_slo") {
      if (!f->is_boolean()) return fmt::format("{}: expected true or false, got {}", field, Shown(*f));
      continue;
    }
    if (auto e = OptionalFigure(*f, field, 0, f.key() == "attainment" ? 1.0 : kMaxPartialFigure)) return e;
  }
  for (const char* key : {"goodput_rps", "throughput_rps", "goodput_per_gpu"}) {
    if (!fleet->contains(key)) return fmt::format("fleet.{}: missing", key);
  }
  if (!fleet->contains("meets_slo")) return "fleet.meets_slo: missing";
  if (row.contains("steps")) {
    if (auto e = CountField(row, "steps", "steps")) return e;
  }
  return std::nullopt;
}

// A max-rate search's result (search.cc MaxRateJson).
std::optional<std::string> CheckMaxRate(const Json& row) {
  const auto m = row.find("max_rate");
  if (m == row.end() || !m->is_object()) return "max_rate: expected the search's result (an object)";
  if (!m->contains("status") || !(*m)["status"].is_string()) return "max_rate.status: expected a string";
  if (!m->contains("monotone") || !(*m)["monotone"].is_boolean()) return "max_rate.monotone: expected true or false";
  if (auto e = OptionalFigure(m->value("rate_per_s", Json()), "max_rate.rate_per_s")) return e;
  const Json bracket = m->value("bracket", Json());
  if (!bracket.is_array() || bracket.size() != 2) return "max_rate.bracket: expected [lowest passing, highest failing]";
  if (auto e = Figure(bracket[0], "max_rate.bracket[0]")) return e;
  if (auto e = OptionalFigure(bracket[1], "max_rate.bracket[1]")) return e;
  const Json probes = m->value("probes", Json());
  if (!probes.is_array()) return "max_rate.probes: expected an array";
  for (size_t i = 0; i < probes.size(); ++i) {
    const Json& p = probes[i];
    const std::string at = fmt::format("max_rate.probes[{}]", i);
    if (!p.is_object()) return fmt::format("{}: expected an object", at);
    if (auto e = Figure(p.value("rate_per_s", Json()), at + ".rate_per_s")) return e;
    if (!p.value("passed", Json()).is_boolean()) return fmt::format("{}.passed: expected true or false", at);
  }
  return std::nullopt;
}

}  // namespace

Status CheckPartialSpec(const Json& spec) {
  const auto fail = [](std::string_view field, std::string_view what) {
    return InvalidInput(fmt::format("spec.{}: {} (the partial's spec was edited?)", field, what));
  };
  if (!spec.value("name", Json()).is_string()) return fail("name", "expected a string");
  if (!spec.value("targets_source", Json()).is_string()) return fail("targets_source", "expected a string");
  const Json axes = spec.value("axes", Json());
  if (!axes.is_array()) return fail("axes", "expected an array of {path, values}");
  int64_t configurations = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const Json& a = axes[i];
    const std::string field = fmt::format("axes[{}]", i);
    if (!a.is_object() || !a.value("path", Json()).is_string() || !a.value("values", Json()).is_array() ||
        a["values"].empty()) {
      return fail(field, "expected {path: string, values: [at least one]}");
    }
    configurations *= static_cast<int64_t>(a["values"].size());
    if (configurations > kMaxSweepPoints)
      return fail("axes", fmt::format("more than {} configurations", kMaxSweepPoints));
  }
  const Json seeds = spec.value("seeds", Json());
  if (!seeds.is_array() || seeds.empty()) return fail("seeds", "expected an array of at least one seed");
  for (const Json& s : seeds) {
    if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<int64_t>() >= 0)) {
      return fail("seeds", fmt::format("expected integer seeds >= 0, got {}", Shown(s)));
    }
  }
  const Json targets = spec.value("targets", Json());
  const Json order = spec.value("target_order", Json());
  if (!targets.is_object()) return fail("targets", "expected an object of attainment targets");
  for (auto it = targets.begin(); it != targets.end(); ++it) {
    if (!it->is_number() || !(it->get<double>() >= 0 && it->get<double>() <= 1)) {
      return fail(fmt::format("targets.{}", it.key()),
                  fmt::format("expected an attainment in [0, 1], got {}", Shown(*it)));
    }
  }
  if (!order.is_array() || order.size() != targets.size()) return fail("target_order", "expected the targets' classes");
  for (const Json& c : order) {
    if (!c.is_string() || !targets.contains(c.get<std::string>()))
      return fail("target_order", "expected the targets' classes");
  }
  const Json stated_configurations = spec.value("configurations", Json());
  if (!stated_configurations.is_number_integer() || stated_configurations.get<int64_t>() != configurations) {
    return fail("configurations", fmt::format("expected {} (the product of the axes' value counts), got {}",
                                              configurations, Shown(stated_configurations)));
  }
  const double points = static_cast<double>(configurations) * static_cast<double>(seeds.size());
  const Json stated_points = spec.value("points", Json());
  if (points > static_cast<double>(kMaxSweepPoints)) {
    return fail("points", fmt::format("the sweep has {:.0f} points; at most {} are allowed", points, kMaxSweepPoints));
  }
  if (!stated_points.is_number_integer() || stated_points.get<double>() != points) {
    return fail("points",
                fmt::format("expected {:.0f} (configurations x seeds), got {}", points, Shown(stated_points)));
  }
  if (spec.contains("price")) {
    const Json& p = spec["price"];
    if (!p.is_object()) return fail("price", "expected {gpu_hour: price}");
    if (auto e = Figure(p.value("gpu_hour", Json()), "gpu_hour", 0, kMaxPartialFigure)) return fail("price", *e);
  }
  if (spec.contains("search")) {
    const Json m = spec["search"].is_object() ? spec["search"].value("max_rate", Json()) : Json();
    if (!m.is_object() || !m.value("axis", Json()).is_string())
      return fail("search", "expected {max_rate: {axis, ...}}");
  }
  return Status::Ok();
}

std::optional<std::string> CheckPartialRow(const Json& spec, const Json& row, int64_t index) {
  const Json& seeds = spec["seeds"];
  const auto n_seeds = static_cast<int64_t>(seeds.size());
  const int64_t configuration = index / n_seeds;
  const Json stated = row.value("configuration", Json());
  if (!stated.is_number_integer() || stated.get<int64_t>() != configuration) {
    return fmt::format("configuration: expected {} (point {} of {} seeds per configuration), got {}", configuration,
                       index, n_seeds, Shown(stated));
  }
  if (row.value("seed", Json()) != seeds[static_cast<size_t>(index % n_seeds)]) {
    return fmt::format("seed: expected {}, the spec's seed of point {}",
                       seeds[static_cast<size_t>(index % n_seeds)].dump(), index);
  }
  // The axis values of the configuration, counted like digits, the first axis most
  // significant (spec.h), written as RowHead writes them.
  Json values = Json::object();
  int64_t rest = configuration;
  const Json& axes = spec["axes"];
  std::vector<size_t> at(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    const auto n = static_cast<int64_t>(axes[i]["values"].size());
    at[i] = static_cast<size_t>(rest % n);
    rest /= n;
  }
  for (size_t i = 0; i < axes.size(); ++i) values[axes[i]["path"].get<std::string>()] = axes[i]["values"][at[i]];
  if (row.value("values", Json()) != values) {
    return fmt::format("values: expected the axis values of configuration {} in the spec", configuration);
  }
  const Json status = row.value("status", Json());
  if (!status.is_string() || (status != "ok" && status != "invalid" && status != "failed")) {
    return fmt::format("status: expected ok, invalid or failed, got {}", Shown(status));
  }
  if (!row.value("reason", Json()).is_string()) return "reason: expected a string";
  if (row.contains("gpus")) {
    const Json& g = row["gpus"];
    if (!g.is_number_integer() || g.get<int64_t>() < 1 || g.get<double>() > kMaxPartialFigure) {
      return fmt::format("gpus: expected a positive integer, got {}", Shown(g));
    }
  } else if (status == "ok") {
    return "gpus: missing";
  }
  if (status == "ok" || row.contains("classes") || row.contains("fleet")) {
    if (auto e = CheckFigures(row)) return e;
  }
  if (status == "ok" && spec.contains("search")) {
    if (auto e = CheckMaxRate(row)) return e;
  } else if (row.contains("max_rate")) {
    if (auto e = CheckMaxRate(row)) return e;
  }
  return std::nullopt;
}

}  // namespace fleetplan::sweep_internal
