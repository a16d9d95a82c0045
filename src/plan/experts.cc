// Expert placement, load, dispatch bytes, update pricing and generations (experts.h).
#include "fleetplan/core/flag_error.h"
#include "fleetplan/plan/experts.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "fleetplan/catalog/dtype.h"
#include "fleetplan/core/error.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/text_lines.h"

namespace fleetplan {
namespace {

// Assignments `count` split over `replicas` copies: replica j's share.
int64_t Share(int64_t count, int64_t replicas, int64_t j) {
  return count / replicas + (j < count % replicas ? 1 : 0);
}

Expected<int64_t> ParseCount(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  int64_t v = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size() && text.front() != '-') {
    return InvalidInput(fmt::format("{} is beyond the largest count this reads, {}", QuoteValue(text),
                                    std::numeric_limits<int64_t>::max()));
  }
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < 0) {
    return InvalidInput(fmt::format("expected a non-negative integer, got {}", QuoteValue(text)));
  }
  return v;
}

// Comma-separated counts; `where(i, column)` locates an error at count i.
template <typename Where>
Expected<std::vector<int64_t>> SplitCounts(std::string_view text, Where where) {
  std::vector<int64_t> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    Expected<int64_t> v = ParseCount(item);
    if (!v.ok()) return where(out.size(), start, v.status().message());
    out.push_back(*v);
    if (out.size() > static_cast<size_t>(kMaxExperts)) {
      return where(out.size() - 1, start, fmt::format("expected at most {} experts", kMaxExperts));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// Columns count UTF-8 code points; counts are ASCII, so a byte offset + 1 is the column
// as long as the line is ASCII up to there (it is, or the count would not have parsed).
int Column(size_t byte_offset) {
  return static_cast<int>(byte_offset) + 1;
}

// Adds `row` to `totals`, refusing a sum beyond kMaxAssignments (no overflow on the way:
// every count is checked against what is left of the bound before it is added).
Status AddCounts(const std::vector<int64_t>& row, std::vector<int64_t>& totals, int64_t& sum) {
  for (size_t e = 0; e < row.size(); ++e) {
    if (row[e] > kMaxAssignments - sum) {
      return InvalidInput(fmt::format("the counts sum to more than {} routed assignments", kMaxAssignments));
    }
    sum += row[e];
    totals[e] += row[e];
  }
  return Status::Ok();
}

}  // namespace

Expected<ExpertCounts> ParseExpertCounts(std::string_view text) {
  ExpertCounts c;
  FP_ASSIGN_OR_RETURN(const std::vector<int64_t> row,
                      SplitCounts(text, [](size_t i, size_t /*offset*/, std::string_view msg) {
                        return InvalidInput(fmt::format("count {}: {}", i + 1, msg));
                      }));
  c.totals.assign(row.size(), 0);
  int64_t sum = 0;
  FP_RETURN_IF_ERROR(AddCounts(row, c.totals, sum));
  return c;
}

Expected<ExpertCounts> ParseExpertCountsCsv(std::string_view text, const std::string& display_name) {
  ExpertCounts c;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    const int line_no = lines.line_no();
    if (line.empty() || line.front() == '#') continue;
    auto where = [&](size_t i, size_t offset, std::string_view msg) {
      return LocatedError(SourceLocation{display_name, line_no, Column(offset), std::string(line)},
                          fmt::format("step {} count {}", c.steps.size() + 1, i + 1), msg);
    };
    FP_ASSIGN_OR_RETURN(std::vector<int64_t> row, SplitCounts(line, where));
    if (!c.steps.empty() && row.size() != c.steps.front().size()) {
      return LocatedError(SourceLocation{display_name, line_no, 1, std::string(line)},
                          fmt::format("step {}", c.steps.size() + 1),
                          fmt::format("expected {} counts (one per expert, as in the first step), got {}",
                                      c.steps.front().size(), row.size()));
    }
    c.steps.push_back(std::move(row));
  }
  if (c.steps.empty()) {
    return LocatedError(SourceLocation{display_name, 0, 0, ""}, "",
                        "expected at least one line of per-expert counts, got none");
  }
  c.totals.assign(c.steps.front().size(), 0);
  int64_t sum = 0;
  for (const std::vector<int64_t>& row : c.steps) {
    const Status added = AddCounts(row, c.totals, sum);
    if (!added.ok()) return LocatedError(SourceLocation{display_name, 0, 0, ""}, "", added.message());
  }
  c.step_count = static_cast<int64_t>(c.steps.size());
  return c;
}

Expected<ExpertCounts> ReadExpertCountsFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return ParseExpertCountsCsv(text, path);
}

Status ValidateExpertShape(int64_t experts, int64_t ranks, int64_t redundant) {
  if (experts < 1 || experts > kMaxExperts) {
    return FlagValueError("--counts", fmt::format("expected between 1 and {} experts, got {}", kMaxExperts, experts));
  }
  if (ranks < 1 || ranks > kMaxExpertRanks) {
    return FlagValueError("--ranks", fmt::format("expected an integer between 1 and {}, got {}", kMaxExpertRanks, ranks));
  }
  if (experts % ranks != 0) {
    return InvalidInput(
        fmt::format("--ranks: {} ranks do not divide the {} experts (each rank holds the same "
                    "number of experts)",
                    ranks, experts));
  }
  if (redundant < 0 || redundant > experts * (ranks - 1)) {
    return InvalidInput(
        fmt::format("--redundant-experts: expected between 0 and {} (one copy of an expert per "
                    "rank at most), got {}",
                    experts * (ranks - 1), redundant));
  }
  if (redundant % ranks != 0) {
    return InvalidInput(
        fmt::format("--redundant-experts: {} redundant copies do not spread evenly over {} ranks "
                    "(use a multiple of {})",
                    redundant, ranks, ranks));
  }
  return Status::Ok();
}

ExpertPlacement ContiguousPlacement(int64_t experts, int64_t ranks) {
  FP_ASSERT(ranks >= 1 && experts % ranks == 0);
  ExpertPlacement p;
  p.ranks = ranks;
  p.slots_per_rank = experts / ranks;
  p.rank_experts.resize(static_cast<size_t>(ranks));
  p.expert_ranks.resize(static_cast<size_t>(experts));
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t r = e / p.slots_per_rank;
    p.rank_experts[static_cast<size_t>(r)].push_back(e);
    p.expert_ranks[static_cast<size_t>(e)].push_back(r);
  }
  return p;
}

ExpertPlacement BalancedPlacement(const std::vector<int64_t>& totals, int64_t ranks, int64_t redundant) {
  const auto experts = static_cast<int64_t>(totals.size());
  FP_ASSERT(ranks >= 1 && redundant >= 0 && (experts + redundant) % ranks == 0);
  FP_ASSERT(redundant <= experts * (ranks - 1));
  std::vector<int64_t> copies(totals.size(), 1);
  for (int64_t extra = 0; extra < redundant; ++extra) {
    // The expert with the most assignments per replica that may still take one.
    size_t best = totals.size();
    for (size_t e = 0; e < totals.size(); ++e) {
      if (copies[e] >= ranks) continue;
      if (best == totals.size() || totals[e] * copies[best] > totals[best] * copies[e]) best = e;
    }
    ++copies[best];
  }
  struct Item {
    int64_t load;
    int64_t expert;
    int64_t replica;
  };
  std::vector<Item> items;
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t r = copies[static_cast<size_t>(e)];
    for (int64_t j = 0; j < r; ++j) items.push_back(Item{Share(totals[static_cast<size_t>(e)], r, j), e, j});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::make_tuple(-a.load, a.expert, a.replica) < std::make_tuple(-b.load, b.expert, b.replica);
  });
  ExpertPlacement p;
  p.ranks = ranks;
  p.slots_per_rank = (experts + redundant) / ranks;
  p.rank_experts.resize(static_cast<size_t>(ranks));
  p.expert_ranks.resize(static_cast<size_t>(experts));
  std::vector<int64_t> load(static_cast<size_t>(ranks), 0);
  for (const Item& it : items) {
    // Least-loaded rank with a free slot and no copy of this expert; if every such rank
    // holds it already (possible only for the last slots), any rank with a free slot.
    int64_t chosen = -1;
    for (const bool distinct : {true, false}) {
      for (int64_t r = 0; r < ranks; ++r) {
        const auto& held = p.rank_experts[static_cast<size_t>(r)];
        if (static_cast<int64_t>(held.size()) >= p.slots_per_rank) continue;
        if (distinct && std::count(held.begin(), held.end(), it.expert) > 0) continue;
        if (chosen < 0 || load[static_cast<size_t>(r)] < load[static_cast<size_t>(chosen)]) chosen = r;
      }
      if (chosen >= 0) break;
    }
    FP_ASSERT(chosen >= 0);  // slots total experts + redundant = items
    p.rank_experts[static_cast<size_t>(chosen)].push_back(it.expert);
    p.expert_ranks[static_cast<size_t>(it.expert)].push_back(chosen);
    load[static_cast<size_t>(chosen)] += it.load;
  }
  for (auto& held : p.rank_experts) std::sort(held.begin(), held.end());
  return p;
}

namespace {

// Loads of one count vector under a placement. A replica's share goes to the rank that
// holds it; replicas are in the order ranks were given them.
std::vector<int64_t> RankLoads(const ExpertPlacement& p, const std::vector<int64_t>& counts) {
  std::vector<int64_t> load(static_cast<size_t>(p.ranks), 0);
  for (size_t e = 0; e < counts.size(); ++e) {
    const std::vector<int64_t>& holders = p.expert_ranks[e];
    const auto r = static_cast<int64_t>(holders.size());
    for (int64_t j = 0; j < r; ++j)
      load[static_cast<size_t>(holders[static_cast<size_t>(j)])] += Share(counts[e], r, j);
  }
  return load;
}

}  // namespace

ExpertLoad LoadOf(const ExpertPlacement& p, const ExpertCounts& counts, Bytes bytes_per_assignment) {
  FP_ASSERT(p.expert_ranks.size() == counts.totals.size());
  ExpertLoad out;
  out.loads = RankLoads(p, counts.totals);
  out.max_load = *std::max_element(out.loads.begin(), out.loads.end());
  const int64_t total = std::accumulate(out.loads.begin(), out.loads.end(), int64_t{0});
  out.mean_load = static_cast<double>(total) / static_cast<double>(p.ranks);
  out.imbalance = total > 0 ? static_cast<double>(out.max_load) / out.mean_load : 0;
  if (counts.steps.empty()) {
    out.mean_step_max_load = static_cast<double>(out.max_load) / static_cast<double>(counts.step_count);
  } else {
    int64_t sum = 0;
    for (const std::vector<int64_t>& row : counts.steps) {
      const std::vector<int64_t> l = RankLoads(p, row);
      sum += *std::max_element(l.begin(), l.end());
    }
    out.mean_step_max_load = static_cast<double>(sum) / static_cast<double>(counts.steps.size());
  }
  // Σ count × (ranks − replicas) / ranks × bytes, rounded down once at the end. The
  // numerator stays below kMaxAssignments × ranks <= 2^56; splitting it into whole and
  // remainder keeps the product with the bytes below 2^62.
  int64_t remote_numerator = 0;
  for (size_t e = 0; e < counts.totals.size(); ++e) {
    remote_numerator += counts.totals[e] * (p.ranks - static_cast<int64_t>(p.expert_ranks[e].size()));
  }
  const int64_t bytes = bytes_per_assignment.count();
  FP_ASSERT(bytes >= 0 && bytes <= kMaxAssignmentBytes);
  out.dispatch_bytes = Bytes(remote_numerator / p.ranks * bytes + remote_numerator % p.ranks * bytes / p.ranks);
  out.combine_bytes = out.dispatch_bytes;
  return out;
}

ExpertCostInputs ExpertCostsOf(const ModelSpec& model, const GpuSpec& gpu, DType weight_dtype,
                               const LinkSpec& copy_link, double compute_efficiency) {
  FP_ASSERT(model.moe.has_value());
  const int64_t matrices = model.gated_mlp ? 3 : 2;
  const int64_t params = matrices * model.hidden * model.moe->expert_intermediate;
  ExpertCostInputs c;
  c.expert_bytes = BytesFor(weight_dtype, params);
  const double flops = 2.0 * static_cast<double>(params);
  c.assignment_time = Duration::FromSecondsRounded(flops / (gpu.PeakFlops(weight_dtype) * compute_efficiency));
  c.copy_link = copy_link;
  c.moe_layers = MoeLayers(model);
  return c;
}

UpdatePrice PriceUpdate(const ExpertPlacement& from, const ExpertPlacement& to, const ExpertLoad& before,
                        const ExpertLoad& after, const ExpertCostInputs& costs) {
  FP_ASSERT(from.ranks == to.ranks);
  UpdatePrice out;
  int64_t most_on_one_rank = 0;
  for (size_t r = 0; r < to.rank_experts.size(); ++r) {
    const std::vector<int64_t>& had = from.rank_experts[r];
    int64_t loaded = 0;
    for (const int64_t e : to.rank_experts[r]) loaded += std::count(had.begin(), had.end(), e) == 0 ? 1 : 0;
    out.copies_loaded += loaded;
    most_on_one_rank = std::max(most_on_one_rank, loaded);
  }
  out.copy_bytes = costs.expert_bytes * out.copies_loaded;
  const double seconds =
      static_cast<double>((costs.expert_bytes * most_on_one_rank).count()) / costs.copy_link.bandwidth;
  out.copy_time = Duration::FromSecondsRounded(seconds) + (most_on_one_rank > 0 ? costs.copy_link.latency : Duration());
  const double saved_assignments = before.mean_step_max_load - after.mean_step_max_load;
  out.saved_per_step = Duration::FromSecondsRounded(saved_assignments * costs.assignment_time.seconds());
  if (out.saved_per_step.ns() > 0) {
    const int64_t saved = out.saved_per_step.ns();
    out.break_even_steps = (out.copy_time.ns() + saved - 1) / saved;
    out.worth = *out.break_even_steps <= costs.horizon_steps;
  }
  return out;
}

ExpertMapRegistry::ExpertMapRegistry(ExpertPlacement initial) {
  acked_.assign(static_cast<size_t>(initial.ranks), true);
  maps_.emplace(1, std::move(initial));
}

Expected<int64_t> ExpertMapRegistry::Propose(ExpertPlacement next) {
  if (pending_) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("generation {} is still waiting for {} rank(s); propose after it is active", *pending_,
                              Waiting().size()));
  }
  if (next.ranks != maps_.at(active_).ranks) {
    return Status(StatusCode::kCheckFailed,
                  fmt::format("the new map has {} ranks, the group has {}", next.ranks, maps_.at(active_).ranks));
  }
  const int64_t generation = maps_.rbegin()->first + 1;
  maps_.emplace(generation, std::move(next));
  pending_ = generation;
  acked_.assign(acked_.size(), false);
  return generation;
}

Status ExpertMapRegistry::Acknowledge(int64_t rank, int64_t generation) {
  if (!pending_ || *pending_ != generation) {
    return Status(StatusCode::kCheckFailed, fmt::format("generation {} is not pending", generation));
  }
  if (rank < 0 || rank >= static_cast<int64_t>(acked_.size())) {
    return Status(StatusCode::kCheckFailed, fmt::format("rank {} is not in the group of {}", rank, acked_.size()));
  }
  acked_[static_cast<size_t>(rank)] = true;
  if (std::all_of(acked_.begin(), acked_.end(), [](bool b) { return b; })) {
    active_ = generation;
    pending_.reset();
    Drop();
  }
  return Status::Ok();
}

std::vector<int64_t> ExpertMapRegistry::Waiting() const {
  std::vector<int64_t> out;
  if (!pending_) return out;
  for (size_t r = 0; r < acked_.size(); ++r) {
    if (!acked_[r]) out.push_back(static_cast<int64_t>(r));
  }
  return out;
}

ExpertMapRegistry::Batch ExpertMapRegistry::BeginBatch() {
  ++running_[active_];
  return Batch{next_batch_++, active_};
}

void ExpertMapRegistry::EndBatch(const Batch& batch) {
  const auto it = running_.find(batch.generation);
  FP_ASSERT(it != running_.end() && it->second > 0);
  if (--it->second == 0) running_.erase(it);
  Drop();
}

const ExpertPlacement& ExpertMapRegistry::Map(int64_t generation) const {
  const auto it = maps_.find(generation);
  FP_ASSERT(it != maps_.end());
  return it->second;
}

std::vector<int64_t> ExpertMapRegistry::Retained() const {
  std::vector<int64_t> out;
  for (const auto& [g, map] : maps_) out.push_back(g);
  return out;
}

void ExpertMapRegistry::Drop() {
  for (auto it = maps_.begin(); it != maps_.end();) {
    const int64_t g = it->first;
    const bool held = g == active_ || (pending_ && g == *pending_) || running_.count(g) > 0;
    it = held ? std::next(it) : maps_.erase(it);
  }
}

}  // namespace fleetplan
