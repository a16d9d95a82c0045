#include "fleetplan/sweep/sweep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "fleetplan/core/limits.h"
#include "fleetplan/core/read_log.h"
#include "fleetplan/sweep/point.h"
#include "fleetplan/sweep/summary.h"
#include "sweep/partial_check.h"
#include "sweep/pretty_object.h"

namespace fleetplan {
namespace {

// Runs `work(i)` for i in [0, n) on `jobs` threads, handing out indices in order.
void ParallelFor(size_t n, int jobs, const std::function<void(size_t)>& work) {
  const size_t threads = std::clamp<size_t>(static_cast<size_t>(std::max(jobs, 1)), 1, std::max<size_t>(n, 1));
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t i = next++; i < n; i = next++) work(i);
  };
  if (threads == 1) {
    loop();
    return;
  }
  std::vector<std::thread> pool;
  // Workers read for the caller: they record into its ReadLog (a plan binds what they read).
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&loop, log = ReadLog::Current()] {
      ReadLogScope scope(log);
      loop();
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace

Expected<Shard> ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  auto bad = [&] {
    return UsageError(fmt::format("--shard: expected I/N with 0 <= I < N (e.g. 0/4), got '{}'", text));
  };
  if (slash == std::string_view::npos) return bad();
  Shard s;
  try {
    size_t used_i = 0, used_n = 0;
    const std::string i(text.substr(0, slash)), n(text.substr(slash + 1));
    s.index = std::stoll(i, &used_i);
    s.count = std::stoll(n, &used_n);
    if (used_i != i.size() || used_n != n.size()) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count) return bad();
  return s;
}

std::vector<int64_t> ShardIndices(const SweepSpec& spec, const Shard& shard) {
  std::vector<int64_t> out;
  for (int64_t i = shard.index; i < spec.points(); i += shard.count) out.push_back(i);
  return out;
}

Status RunSweepPoints(const SweepSpec& spec, const std::vector<int64_t>& indices, int jobs, JsonSpool& rows,
                      const PointDoneFn& on_done) {
  FP_ASSERT(rows.slots() == spec.points());
  std::mutex error_mu;
  Status first_error;
  auto put = [&](int64_t index, const Json& row) {
    Status s = rows.Put(index, row);
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(error_mu);
    if (first_error.ok()) first_error = std::move(s);
  };
  std::vector<char> valid(indices.size(), 0);
  std::vector<int64_t> gpus(indices.size(), 0);
  // Every point is bound before any simulation starts.
  ParallelFor(indices.size(), jobs, [&](size_t i) {
    std::optional<Json> invalid = CheckPoint(spec, PointAt(spec, indices[i]), &gpus[i]);
    if (invalid) {
      put(indices[i], *invalid);
    } else {
      valid[i] = 1;
    }
  });
  std::atomic<int64_t> done{0}, failed{0};
  std::vector<size_t> to_run;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (valid[i]) {
      to_run.push_back(i);
    } else {
      ++done;
    }
  }
  if (on_done) on_done(done, failed);
  // Largest fleets first, so the last points to finish are short ones and no thread idles
  // through a long tail. Rows are stored by index: the order changes no output byte.
  std::stable_sort(to_run.begin(), to_run.end(), [&](size_t a, size_t b) { return gpus[a] > gpus[b]; });
  std::mutex progress_mu;
  ParallelFor(to_run.size(), jobs, [&](size_t k) {
    const int64_t index = indices[to_run[k]];
    const Json row = RunPoint(spec, PointAt(spec, index));
    const bool bad = row["status"] != "ok";
    put(index, row);
    const int64_t d = ++done;
    const int64_t f = bad ? ++failed : failed.load();
    if (on_done) {
      std::lock_guard<std::mutex> lock(progress_mu);
      on_done(d, f);
    }
  });
  return first_error;
}

Status WritePartial(const SweepSpec& spec, const Shard& shard, const JsonSpool& rows, const TextSink& sink) {
  sweep_internal::PrettyObjectWriter doc(sink);
  FP_RETURN_IF_ERROR(doc.Member("kind", "fleetplan-sweep-partial"));
  FP_RETURN_IF_ERROR(doc.SpooledArray("points", rows));
  FP_RETURN_IF_ERROR(doc.Member("shard", {{"index", shard.index}, {"count", shard.count}}));
  FP_RETURN_IF_ERROR(doc.Member("spec", spec.Describe()));
  return doc.Close();
}

namespace {

// Thrown from a parse callback to stop the parse with a message.
struct StopParse {
  std::string why;
};

// Parses the partial at `path` as a stream, handing each element of its "points" to
// `on_point` (which may throw StopParse) instead of keeping it: the value returned holds
// every other member and an empty "points".
Expected<Json> ParsePartial(const std::string& path, const std::function<void(Json&)>& on_point) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return InvalidInput(fmt::format("cannot read '{}': {}", path, std::generic_category().message(errno)));
  }
  std::string top_key;  // the top-level member being read
  const Json::parser_callback_t callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxNestingDepth) {
      throw StopParse{JsonNestingMessage()};
    }
    if (event == Json::parse_event_t::key && depth == 1) top_key = parsed.get<std::string>();
    const bool point_done = depth == 2 && top_key == "points" &&
                            (event == Json::parse_event_t::object_end || event == Json::parse_event_t::value);
    if (!point_done) return true;
    on_point(parsed);
    return false;  // not kept
  };
  Expected<Json> out = Json();
  try {
    Json doc = Json::parse(file, callback);
    out = std::move(doc);
  } catch (const StopParse& stop) {
    out = InvalidInput(fmt::format("{}: {}", path, stop.why));
  } catch (const Json::exception& e) {
    out = InvalidInput(fmt::format("{}: not valid JSON (a partial sweep result?): {}", path, e.what()));
  }
  std::fclose(file);
  return out;
}

bool IsPartial(const Json& p) {
  return p.is_object() && p.value("kind", "") == "fleetplan-sweep-partial" && p.contains("spec") &&
         p["spec"].is_object() && p["spec"].value("digest", Json()).is_string() &&
         p["spec"].value("points", Json()).is_number_integer() && p.contains("shard") && p["shard"].is_object() &&
         p["shard"].value("index", Json()).is_number_integer() &&
         p["shard"].value("count", Json()).is_number_integer() && p.contains("points") && p["points"].is_array();
}

// Every partial once, of one spec: the checks of MergePartials on the partials' headers.
Status CheckShards(const std::vector<Json>& partials, const std::vector<std::string>& names) {
  const std::string digest = partials[0]["spec"]["digest"].get<std::string>();
  const int64_t count = partials[0]["shard"]["count"].get<int64_t>();
  std::map<int64_t, std::string> seen;
  for (size_t i = 0; i < partials.size(); ++i) {
    const Json& p = partials[i];
    if (p["spec"]["digest"] != digest) {
      return InvalidInput(
          fmt::format("{} is a shard of another sweep spec ({}) than {} ({}); merge shards of one spec only", names[i],
                      p["spec"]["digest"].get<std::string>(), names[0], digest));
    }
    if (p["shard"]["count"].get<int64_t>() != count) {
      return InvalidInput(fmt::format("{} is shard {}/{} but {} is one of {} shards", names[i],
                                      p["shard"]["index"].get<int64_t>(), p["shard"]["count"].get<int64_t>(), names[0],
                                      count));
    }
    const int64_t index = p["shard"]["index"].get<int64_t>();
    if (index < 0 || index >= count) {
      return InvalidInput(
          fmt::format("{}: shard {}/{} does not exist (expected I/N with 0 <= I < N)", names[i], index, count));
    }
    if (auto it = seen.find(index); it != seen.end()) {
      return InvalidInput(fmt::format("shard {}/{} is given twice: {} and {}", index, count, it->second, names[i]));
    }
    seen[index] = names[i];
  }
  std::vector<std::string> missing;
  for (int64_t s = 0; s < count && missing.size() < 16; ++s) {
    if (!seen.contains(s)) missing.push_back(fmt::format("{}/{}", s, count));
  }
  if (!missing.empty()) {
    return InvalidInput(fmt::format("missing shard{} {}{} of spec {}", missing.size() > 1 ? "s" : "",
                                    fmt::join(missing, ", "),
                                    static_cast<int64_t>(seen.size()) + 16 < count ? ", ..." : "", digest));
  }
  return Status::Ok();
}

}  // namespace

Expected<SweepResult> MergePartials(const std::vector<std::string>& paths) {
  if (paths.empty()) return UsageError("sweep merge: no partial results given");
  // Pass 1: every file's header (its rows are read and dropped), checked before any row is kept.
  std::vector<Json> headers;
  for (const std::string& path : paths) {
    FP_ASSIGN_OR_RETURN(Json header, ParsePartial(path, [](Json&) {}));
    if (!IsPartial(header)) {
      return InvalidInput(
          fmt::format("{}: not a partial sweep result (written by `fleetplan sweep --shard I/N`)", path));
    }
    headers.push_back(std::move(header));
  }
  FP_RETURN_IF_ERROR(CheckShards(headers, paths));
  const Json& spec = headers[0]["spec"];
  // The digest names the spec's bytes, which a partial does not hold: the spec body it
  // carries is what the summary reads, so every partial must carry the same one, and that
  // one must be a spec a run writes (its counts recomputed, within the points limit).
  for (size_t f = 1; f < headers.size(); ++f) {
    if (headers[f]["spec"] != spec) {
      return InvalidInput(fmt::format("{}: its spec differs from the one in {} though both name {}; a partial was edited",
                                      paths[f], paths[0], spec["digest"].get<std::string>()));
    }
  }
  if (Status ok = sweep_internal::CheckPartialSpec(spec); !ok.ok()) {
    return InvalidInput(fmt::format("{}: {}", paths[0], ok.message()));
  }
  const int64_t points = spec["points"].get<int64_t>();
  // Pass 2: the rows, one at a time, into the spool.
  FP_ASSIGN_OR_RETURN(std::unique_ptr<JsonSpool> rows, JsonSpool::Create(points));
  for (size_t f = 0; f < paths.size(); ++f) {
    const int64_t shard = headers[f]["shard"]["index"].get<int64_t>();
    const int64_t count = headers[f]["shard"]["count"].get<int64_t>();
    int64_t position = 0;
    auto keep = [&](Json& row) {
      const int64_t at = position++;
      const Json index = row.is_object() ? row.value("index", Json()) : Json();
      if (!index.is_number_integer() || index.get<int64_t>() < 0 || index.get<int64_t>() >= points) {
        throw StopParse{fmt::format("points[{}] has no index in [0, {}) (the file is damaged?)", at, points)};
      }
      const int64_t i = index.get<int64_t>();
      if (i % count != shard) throw StopParse{fmt::format("point {} is not one of shard {}/{}", i, shard, count)};
      if (rows->Has(i)) throw StopParse{fmt::format("point {} is given twice", i)};
      if (auto bad = sweep_internal::CheckPartialRow(spec, row, i)) throw StopParse{fmt::format("point {}: {}", i, *bad)};
      Status put = rows->Put(i, row);
      if (!put.ok()) throw StopParse{put.message()};
    };
    FP_ASSIGN_OR_RETURN(const Json again, ParsePartial(paths[f], keep));
    if (again != headers[f]) return InvalidInput(fmt::format("{}: changed while being merged", paths[f]));
  }
  for (int64_t i = 0; i < points; ++i) {
    if (!rows->Has(i)) {
      const int64_t count = headers[0]["shard"]["count"].get<int64_t>();
      for (size_t f = 0; f < paths.size(); ++f) {
        if (headers[f]["shard"]["index"].get<int64_t>() == i % count) {
          return InvalidInput(
              fmt::format("{}: point {} of its shard is missing (the file is incomplete?)", paths[f], i));
        }
      }
    }
  }
  try {
    return SummarizeSweep(spec, std::move(rows));
  } catch (const Json::exception& e) {
    return InvalidInput(
        fmt::format("sweep merge: a point's row in {} is malformed: {}", fmt::join(paths, ", "), e.what()));
  }
}

Expected<std::vector<std::string>> WriteSweep(const SweepResult& sweep, const std::string& dir) {
  const std::string json_path = dir + "/sweep.json";
  const std::string csv_path = dir + "/sweep.csv";
  {
    FP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> json, OutputFile::Open(json_path));
    FP_RETURN_IF_ERROR(sweep.WriteJson(json->Sink()));
    FP_RETURN_IF_ERROR(json->Commit());
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> csv, OutputFile::Open(csv_path));
  FP_RETURN_IF_ERROR(sweep.WriteCsv(csv->Sink()));
  FP_RETURN_IF_ERROR(csv->Commit());
  return std::vector<std::string>{json_path, csv_path};
}

}  // namespace fleetplan
