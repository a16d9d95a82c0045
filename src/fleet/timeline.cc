#include "fleetplan/fleet/timeline.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

#include "fleetplan/core/rng.h"

namespace fleetplan {
namespace {

// Microseconds with three decimals from integer nanoseconds (exact, no double).
std::string Micros(int64_t ns) {
  const int64_t whole = ns / 1000;
  const int64_t frac = ns % 1000;
  return fmt::format("{}.{:03d}", whole, frac < 0 ? -frac : frac);
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

Expected<std::unique_ptr<TimelineWriter>> TimelineWriter::Open(const std::string& path, int32_t replicas,
                                                               const WorkloadNames* names, int64_t max_events) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Open(path));
  std::unique_ptr<TimelineWriter> w(new TimelineWriter(file.get(), names, max_events));
  w->owned_ = std::move(file);
  w->Start(replicas);
  FP_RETURN_IF_ERROR(w->status_);
  return w;
}

Expected<std::unique_ptr<TimelineWriter>> TimelineWriter::Open(OutputFile* file, int32_t replicas,
                                                               const WorkloadNames* names, int64_t max_events) {
  std::unique_ptr<TimelineWriter> w(new TimelineWriter(file, names, max_events));
  w->Start(replicas);
  FP_RETURN_IF_ERROR(w->status_);
  return w;
}

void TimelineWriter::Start(int32_t replicas) {
  Write("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  step_index_.assign(static_cast<size_t>(replicas), 0);
  Emit(R"({"ph":"M","name":"process_name","pid":0,"args":{"name":"router"}})");
  for (int32_t r = 0; r < replicas; ++r) {
    Emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"replica {}"}}}})", r + 1, r));
    Emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":1,"args":{{"name":"steps"}}}})", r + 1));
  }
}

TimelineWriter::TimelineWriter(OutputFile* file, const WorkloadNames* names, int64_t max_events)
    : out_(file), names_(names), max_events_(max_events), next_budget_(max_events) {}

void TimelineWriter::Write(std::string_view text) {
  if (status_.ok()) status_ = out_->Write(text);
}

void TimelineWriter::Emit(const std::string& event) {
  if (!first_) Write(",\n");
  first_ = false;
  Write(event);
  if (++events_ >= next_budget_) {
    // Budget spent: halve what is kept from now on.
    period_ *= 2;
    next_budget_ += max_events_ / 2 + 1;
  }
}

void TimelineWriter::EnsureReplica(int32_t replica) {
  while (step_index_.size() <= static_cast<size_t>(replica)) {
    const auto r = static_cast<int32_t>(step_index_.size());
    step_index_.push_back(0);
    Emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"replica {}"}}}})", r + 1, r));
    Emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":1,"args":{{"name":"steps"}}}})", r + 1));
  }
}

bool TimelineWriter::KeepStep(int32_t replica) {
  // A replica added during the run (Simulation::AddReplica) gets its tracks when it
  // first steps.
  EnsureReplica(replica);
  const int64_t index = step_index_[static_cast<size_t>(replica)]++;
  return index % period_ == 0;
}

bool TimelineWriter::KeepRequest(RequestId id) const {
  return SplitMix64(static_cast<uint64_t>(id)) % static_cast<uint64_t>(period_) == 0;
}

void TimelineWriter::OnStep(const StepRecord& s) {
  if (closed_ || !KeepStep(s.replica)) return;
  const int pid = s.replica + 1;
  Emit(fmt::format(
      R"({{"ph":"X","name":"step","pid":{},"tid":1,"ts":{},"dur":{},"args":{{"decodes":{},"prefill_seqs":{},"prefill_tokens":{},"host_us":{},"gpu_us":{}}}}})",
      pid, Micros(s.start.ns()), Micros((s.end - s.start).ns()), s.shape.decode_seqs, s.shape.prefill_seqs,
      s.shape.prefill_tokens, Micros(s.host.ns()), Micros(s.gpu.ns())));
  Emit(fmt::format(R"({{"ph":"C","name":"queue","pid":{},"ts":{},"args":{{"waiting":{},"running":{}}}}})", pid,
                   Micros(s.start.ns()), s.waiting, s.running));
  // cached: blocks the prefix cache holds (published), evictable: those no request uses.
  Emit(fmt::format(R"({{"ph":"C","name":"kv_blocks","pid":{},"ts":{},"args":{{"used":{},"cached":{},"evictable":{}}}}})",
                   pid, Micros(s.start.ns()), s.kv_used_blocks, s.kv_cached_blocks, s.kv_evictable_blocks));
}

void TimelineWriter::OnRequestDone(const RequestOutcome& o) {
  if (closed_ || !KeepRequest(o.id)) return;
  const int pid = o.replica + 1;
  const std::string cls =
      (names_ != nullptr && o.class_id >= 0 && static_cast<size_t>(o.class_id) < names_->classes.size())
          ? names_->classes[static_cast<size_t>(o.class_id)]
          : std::to_string(o.class_id);
  const SimTime end = o.finish.value_or(o.arrival);
  const SimTime mid = o.first_token.value_or(end);
  const std::string args =
      fmt::format(R"({{"id":{},"class":{},"status":"{}","input_tokens":{},"output_tokens":{},"preemptions":{}}})",
                  o.id, JsonString(cls), RequestStatusName(o.status), o.input_tokens, o.output_tokens, o.preemptions);
  Emit(fmt::format(R"({{"ph":"b","cat":"request","name":"queued+prefill","id":{},"pid":{},"ts":{},"args":{}}})", o.id,
                   pid, Micros(o.arrival.ns()), args));
  Emit(fmt::format(R"({{"ph":"e","cat":"request","name":"queued+prefill","id":{},"pid":{},"ts":{}}})", o.id, pid,
                   Micros(mid.ns())));
  if (o.first_token && end > mid) {
    Emit(fmt::format(R"({{"ph":"b","cat":"request","name":"decode","id":{},"pid":{},"ts":{}}})", o.id, pid,
                     Micros(mid.ns())));
    Emit(fmt::format(R"({{"ph":"e","cat":"request","name":"decode","id":{},"pid":{},"ts":{}}})", o.id, pid,
                     Micros(end.ns())));
  }
}

void TimelineWriter::LabelReplica(int32_t replica, std::string_view role) {
  if (closed_) return;
  Emit(fmt::format(R"({{"ph":"M","name":"process_labels","pid":{},"args":{{"labels":{}}}}})", replica + 1,
                   JsonString(role)));
  Emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":2,"args":{{"name":"kv transfers"}}}})",
                   replica + 1));
}

void TimelineWriter::OnRoute(const RouteEvent& e) {
  if (closed_ || !KeepRequest(e.id)) return;
  Emit(fmt::format(
      R"({{"ph":"i","s":"p","name":"route","pid":0,"tid":1,"ts":{},"args":{{"id":{},"replica":{},"stage":{},"matched_prefix_tokens":{},"queue_age_us":{}}}}})",
      Micros(e.at.ns()), e.id, e.replica, JsonString(e.stage), e.matched_prefix_tokens, Micros(e.queue_age.ns())));
}

void TimelineWriter::OnTransfer(const TransferEvent& t) {
  if (closed_ || !KeepRequest(t.id)) return;
  // One flow id per attempt: request id x 128 + attempt (attempts are at most 101).
  const int64_t flow = t.id * 128 + t.attempt;
  const std::string args = fmt::format(R"({{"id":{},"attempt":{},"from":{},"to":{},"bytes":{},"outcome":{}}})", t.id,
                                       t.attempt, t.from, t.to, t.bytes, JsonString(t.outcome));
  for (const int32_t replica : {t.from, t.to}) {
    Emit(fmt::format(R"({{"ph":"X","name":"kv {}","pid":{},"tid":2,"ts":{},"dur":{},"args":{}}})",
                     replica == t.from ? "send" : "receive", replica + 1, Micros(t.start.ns()),
                     Micros((t.end - t.start).ns()), args));
  }
  Emit(fmt::format(R"({{"ph":"s","cat":"kv","name":"kv transfer","id":{},"pid":{},"tid":2,"ts":{}}})", flow,
                   t.from + 1, Micros(t.start.ns())));
  Emit(fmt::format(R"({{"ph":"f","bp":"e","cat":"kv","name":"kv transfer","id":{},"pid":{},"tid":2,"ts":{}}})",
                   flow, t.to + 1, Micros(t.end.ns())));
}

void TimelineWriter::AddTimeSeries(const TimeSeriesData& d) {
  if (closed_) return;
  // One counter event per table and window, every series an arg: Perfetto draws a track
  // per arg ("ts arrivals", "ts running", ...).
  std::string event;
  const auto counters = [&](int pid, const SeriesTable& t, const std::vector<double>* goodput) {
    for (int64_t k = 0; k < d.windows; ++k) {
      event.clear();
      fmt::format_to(std::back_inserter(event), R"({{"ph":"C","name":"ts","pid":{},"ts":{},"args":{{)", pid,
                     Micros(d.window_start(k).ns()));
      const auto w = static_cast<size_t>(k);
      for (size_t c = 0; c < t.columns.size(); ++c) {
        fmt::format_to(std::back_inserter(event), R"({}{}:{})", c > 0 ? "," : "", JsonString(t.columns[c].name),
                       t.columns[c].values[w]);
      }
      if (goodput != nullptr) fmt::format_to(std::back_inserter(event), R"(,"goodput_rps":{})", (*goodput)[w]);
      event += "}}";
      Emit(event);
    }
  };
  for (size_t r = 0; r < d.replicas.size(); ++r) counters(static_cast<int>(r) + 1, d.replicas[r], nullptr);
  const int fleet_pid = static_cast<int>(std::max(d.replicas.size(), step_index_.size())) + 1;
  Emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"fleet"}}}})", fleet_pid));
  const SeriesTable fleet = d.Fleet();
  const std::vector<double> fleet_goodput = d.GoodputRps(fleet);
  counters(fleet_pid, fleet, &fleet_goodput);
  for (size_t c = 0; c < d.classes.size(); ++c) {
    const std::vector<double> goodput = d.GoodputRps(d.classes[c]);
    for (int64_t k = 0; k < d.windows; ++k) {
      Emit(fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{},"args":{{"goodput_rps":{}}}}})",
                       JsonString("ts " + d.class_names[c]), fleet_pid, Micros(d.window_start(k).ns()),
                       goodput[static_cast<size_t>(k)]));
    }
  }
}

void TimelineWriter::AddReplicaStates(const std::vector<StateSpan>& spans) {
  if (closed_) return;
  int32_t named = -1;
  for (const StateSpan& s : spans) {
    EnsureReplica(s.replica);
    if (s.replica != named) {
      Emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":3,"args":{{"name":"state"}}}})",
                       s.replica + 1));
      named = s.replica;
    }
    Emit(fmt::format(R"({{"ph":"X","cat":"state","name":{},"pid":{},"tid":3,"ts":{},"dur":{}}})", JsonString(s.state),
                     s.replica + 1, Micros(s.start.ns()), Micros((s.end - s.start).ns())));
  }
}

Status TimelineWriter::Close() {
  if (closed_) return status_;
  closed_ = true;
  Write(fmt::format("\n],\"metadata\":{{\"generator\":\"fleetplan\",\"events\":{},\"sampling_period\":{}}}}}\n", events_,
                    period_));
  if (status_.ok() && owned_ != nullptr) status_ = owned_->Commit();
  return status_;
}

}  // namespace fleetplan
