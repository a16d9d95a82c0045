// fleetplan JSONL: the lossless trace format (trace.h, docs/traces.md). Reading goes
// through FlatJsonLine; writing formats canonical JSON directly (sorted keys, no
// spaces), byte-identical to CanonicalJson of the same record, without building a DOM.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/limits.h"
#include "fleetplan/core/output_file.h"
#include "fleetplan/workload/trace.h"
#include "workload/json_fields.h"
#include "workload/json_line.h"
#include "workload/trace_internal.h"

namespace fleetplan {
namespace workload_internal {
namespace {

// Record keys in canonical (sorted) order: the order FormatTraceRecord writes them.
enum Key : int {
  kAdapter = 0,
  kArrivalNs,
  kCancelAtNs,
  kClass,
  kDeadlineNs,
  kId,
  kOutputTokens,
  kPriority,
  kPrompt,
  kSession,
  kTenant,
  kTurn,
  kKeyCount,
};

const std::vector<std::string>& KeyNames() {
  static const std::vector<std::string> names = {
      "adapter", "arrival_ns", "cancel_at_ns", "class", "deadline_ns", "id",
      "output_tokens", "priority", "prompt", "session", "tenant", "turn"};
  return names;
}

int KeyIndex(std::string_view key) {
  const auto& names = KeyNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == key) return static_cast<int>(i);
  }
  return -1;
}

Expected<std::vector<std::string>> NameList(const Json& header, const char* key, bool required,
                                            const RowContext& ctx) {
  std::vector<std::string> out;
  if (!header.contains(key)) {
    if (required) return ctx.Error(1, key, "missing required field in the trace header");
    return out;
  }
  const Json& list = header.at(key);
  if (!list.is_array()) return ctx.Error(1, key, "expected an array of names");
  for (const Json& name : list) {
    if (!name.is_string()) return ctx.Error(1, key, fmt::format("expected names (strings), got {}", name.dump()));
    const auto& s = name.get_ref<const std::string&>();
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      return ctx.Error(1, key, fmt::format("the name '{}' appears twice", s));
    }
    out.push_back(s);
  }
  return out;
}

class FleetplanRowParser final : public RowParser {
 public:
  bool has_header() const override { return true; }

  Status ParseHeader(const RowContext& ctx, WorkloadNames* names) override {
    if (const size_t deep = FindJsonNestingBeyond(ctx.line); deep != std::string_view::npos) {
      return ctx.Error(static_cast<int>(deep) + 1, "", JsonNestingMessage());
    }
    Json header;
    try {
      header = ParseJsonText(ctx.line);
    } catch (const Json::parse_error& e) {
      return ctx.Error(static_cast<int>(e.byte), "", "the trace header is not valid JSON");
    }
    if (!header.is_object()) return ctx.Error(1, "", "expected the trace header object on line 1");
    static const std::vector<std::string> kHeaderKeys = {"adapters", "classes", "format", "source", "tenants",
                                                         "version"};
    for (const auto& [key, value] : header.items()) {
      if (std::find(kHeaderKeys.begin(), kHeaderKeys.end(), key) == kHeaderKeys.end()) {
        return ctx.Error(1, "", UnknownNameMessage("header field", key, kHeaderKeys));
      }
    }
    if (header.value("format", Json()) != Json(kFleetplanTraceFormatTag)) {
      return ctx.Error(1, "format", fmt::format("expected \"{}\" (the fleetplan trace header)", kFleetplanTraceFormatTag));
    }
    const Json version = header.value("version", Json());
    if (!version.is_number_integer() || version.get<int64_t>() != kFleetplanTraceVersion) {
      return ctx.Error(1, "version", fmt::format("unsupported trace version {} (this fleetplan reads version {})",
                                                 version.dump(), kFleetplanTraceVersion));
    }
    FP_ASSIGN_OR_RETURN(names->classes, NameList(header, "classes", true, ctx));
    if (names->classes.empty()) return ctx.Error(1, "classes", "expected at least one class");
    FP_ASSIGN_OR_RETURN(names->tenants, NameList(header, "tenants", false, ctx));
    FP_ASSIGN_OR_RETURN(names->adapters, NameList(header, "adapters", false, ctx));
    provenance_ = header.value("source", Json::object());
    if (!provenance_.is_object()) return ctx.Error(1, "source", "expected an object");
    classes_ = std::make_unique<NameInterner>(&names->classes);
    tenants_ = std::make_unique<NameInterner>(&names->tenants);
    adapters_ = std::make_unique<NameInterner>(&names->adapters);
    names_ = names;
    return Status::Ok();
  }

  Status ParseRow(const RowContext& ctx, WorkloadNames*, Request* out, ParsedRow* row) override {
    FP_RETURN_IF_ERROR(JsonRowReader::ParseLine(ctx, &json_));
    const JsonRowReader reader(ctx, json_);
    uint32_t node[kKeyCount] = {};
    bool seen[kKeyCount] = {};
    for (const JsonField& f : json_.fields()) {
      const int k = KeyIndex(f.key);
      if (k < 0) return reader.UnknownField(f, KeyNames());
      if (seen[k]) return reader.DuplicateField(f);
      seen[k] = true;
      node[k] = f.node;
    }
    for (int k : {kArrivalNs, kClass, kId, kOutputTokens, kPrompt}) {
      if (!seen[k]) return reader.MissingField(KeyNames()[static_cast<size_t>(k)]);
    }
    FP_ASSIGN_OR_RETURN(int64_t id, reader.Int(node[kId], "id", 0));
    if (id != rows_) {
      return reader.Error(node[kId], "id", fmt::format("expected {} (ids count 0, 1, 2, ... in file order), got {}",
                                                       rows_, id));
    }
    FP_ASSIGN_OR_RETURN(int64_t arrival, reader.Int(node[kArrivalNs], "arrival_ns", 0));
    FP_ASSIGN_OR_RETURN(out->class_id, Handle(reader, node[kClass], "class", *classes_, names_->classes));
    if (seen[kTenant]) {
      FP_ASSIGN_OR_RETURN(out->tenant, Handle(reader, node[kTenant], "tenant", *tenants_, names_->tenants));
    }
    if (seen[kAdapter]) {
      FP_ASSIGN_OR_RETURN(out->adapter, Handle(reader, node[kAdapter], "adapter", *adapters_, names_->adapters));
    }
    if (seen[kPriority]) {
      FP_ASSIGN_OR_RETURN(int64_t priority, reader.Int(node[kPriority], "priority",
                                                       std::numeric_limits<int32_t>::min(),
                                                       std::numeric_limits<int32_t>::max()));
      out->priority = static_cast<int32_t>(priority);
    }
    FP_RETURN_IF_ERROR(ReadPrompt(reader, node[kPrompt], out));
    FP_ASSIGN_OR_RETURN(out->output_tokens, reader.Int(node[kOutputTokens], "output_tokens", 1, kMaxRequestTokens));
    if (seen[kDeadlineNs]) {
      FP_ASSIGN_OR_RETURN(int64_t t, reader.Int(node[kDeadlineNs], "deadline_ns", arrival));
      out->deadline = SimTime::FromNanos(t);
    }
    if (seen[kCancelAtNs]) {
      FP_ASSIGN_OR_RETURN(int64_t t, reader.Int(node[kCancelAtNs], "cancel_at_ns", arrival));
      out->cancel_at = SimTime::FromNanos(t);
    }
    if (seen[kSession] != seen[kTurn]) {
      const int present = seen[kSession] ? kSession : kTurn;
      return reader.Error(node[present], KeyNames()[static_cast<size_t>(present)],
                          "session and turn come together: give both or neither");
    }
    if (seen[kSession]) {
      FP_ASSIGN_OR_RETURN(out->session, reader.Int(node[kSession], "session", 0));
      FP_ASSIGN_OR_RETURN(int64_t turn, reader.Int(node[kTurn], "turn", 0, std::numeric_limits<int32_t>::max()));
      out->turn = static_cast<int32_t>(turn);
    }
    ++rows_;
    out->arrival = SimTime::FromNanos(arrival);
    row->raw_time_ns = arrival;
    row->time_column = reader.node(node[kArrivalNs]).column;
    return Status::Ok();
  }

  std::string_view time_field() const override { return "arrival_ns"; }
  std::string FormatTime(int64_t raw_ns) const override { return fmt::format("{} ns", raw_ns); }
  const Json& provenance() const override { return provenance_; }

 private:
  static Expected<int32_t> Handle(const JsonRowReader& reader, uint32_t index, std::string_view what,
                                  const NameInterner& interner, const std::vector<std::string>& valid) {
    FP_ASSIGN_OR_RETURN(std::string_view name, reader.String(index, what));
    const int32_t handle = interner.Find(name);
    if (handle >= 0) return handle;
    return reader.Error(index, what,
                        UnknownNameMessage(what, name, valid) + " — names must be declared in the header");
  }

  Status ReadPrompt(const JsonRowReader& reader, uint32_t index, Request* out) const {
    FP_RETURN_IF_ERROR(reader.Array(index, "prompt"));
    const JsonNodeLite& prompt = reader.node(index);
    if (prompt.children == 0) return reader.Error(index, "prompt", "expected at least one segment");
    out->prompt.reserve(prompt.children);
    uint32_t child = index + 1;
    for (uint32_t i = 0; i < prompt.children; ++i, child = json_.NextSibling(child)) {
      const JsonNodeLite& seg = reader.node(child);
      const JsonNodeLite& content = reader.node(child + 1);
      const JsonNodeLite& tokens = reader.node(child + 2);
      const bool fast = seg.kind == JsonKind::kArray && seg.children == 2 && seg.subtree == 2 &&
                        (content.kind == JsonKind::kUInt || (content.kind == JsonKind::kInt && content.integer >= 0)) &&
                        tokens.kind == JsonKind::kInt && tokens.integer >= 1 &&
                        tokens.integer <= kMaxRequestTokens;
      if (fast) {
        out->prompt.push_back(PromptSegment{content.uinteger, tokens.integer});
        continue;
      }
      // Slow path: find what is wrong, with its path.
      const std::string path = fmt::format("prompt[{}]", i);
      FP_RETURN_IF_ERROR(reader.Array(child, path, 2));
      FP_ASSIGN_OR_RETURN(uint64_t c, reader.UInt64(child + 1, path + "[0]"));
      const uint32_t second = json_.NextSibling(child + 1);
      FP_ASSIGN_OR_RETURN(int64_t t, reader.Int(second, path + "[1]", 1, kMaxRequestTokens));
      out->prompt.push_back(PromptSegment{c, t});
    }
    return Status::Ok();
  }

  FlatJsonLine json_;
  Json provenance_ = Json::object();
  WorkloadNames* names_ = nullptr;
  std::unique_ptr<NameInterner> classes_, tenants_, adapters_;
  int64_t rows_ = 0;
};

// Names escaped as JSON strings (with quotes), exactly as nlohmann dumps them.
class EscapedNames {
 public:
  void Update(const WorkloadNames& names) {
    Sync(names.classes, &classes_);
    Sync(names.tenants, &tenants_);
    Sync(names.adapters, &adapters_);
  }
  const std::string& cls(ClassId i) const { return classes_[static_cast<size_t>(i)]; }
  const std::string& tenant(TenantId i) const { return tenants_[static_cast<size_t>(i)]; }
  const std::string& adapter(AdapterId i) const { return adapters_[static_cast<size_t>(i)]; }

 private:
  static void Sync(const std::vector<std::string>& names, std::vector<std::string>* escaped) {
    while (escaped->size() < names.size()) escaped->push_back(Json(names[escaped->size()]).dump());
  }
  std::vector<std::string> classes_, tenants_, adapters_;
};

void AppendRecord(const Request& r, const EscapedNames& names, std::string* out) {
  auto it = std::back_inserter(*out);
  out->push_back('{');
  if (r.adapter != kNoAdapter) fmt::format_to(it, "\"adapter\":{},", names.adapter(r.adapter));
  fmt::format_to(it, "\"arrival_ns\":{},", r.arrival.ns());
  if (r.cancel_at) fmt::format_to(it, "\"cancel_at_ns\":{},", r.cancel_at->ns());
  fmt::format_to(it, "\"class\":{},", names.cls(r.class_id));
  if (r.deadline) fmt::format_to(it, "\"deadline_ns\":{},", r.deadline->ns());
  fmt::format_to(it, "\"id\":{},\"output_tokens\":{},\"priority\":{},\"prompt\":[", r.id, r.output_tokens,
                 r.priority);
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    fmt::format_to(it, "{}[{},{}]", i == 0 ? "" : ",", r.prompt[i].content, r.prompt[i].tokens);
  }
  out->push_back(']');
  if (r.session >= 0) fmt::format_to(it, ",\"session\":{}", r.session);
  if (r.tenant != kNoTenant) fmt::format_to(it, ",\"tenant\":{}", names.tenant(r.tenant));
  if (r.session >= 0) fmt::format_to(it, ",\"turn\":{}", r.turn);
  out->append("}\n");
}

}  // namespace

Expected<std::unique_ptr<RowParser>> MakeFleetplanRowParser(const TraceReadOptions& options) {
  FP_RETURN_IF_ERROR(RejectDropFailed(options, "fleetplan"));
  if (options.class_name) {
    return InvalidInput("class: a fleetplan trace names the class of every request; drop --class / `class:`");
  }
  return std::unique_ptr<RowParser>(std::make_unique<FleetplanRowParser>());
}

}  // namespace workload_internal

std::string FormatTraceHeader(const WorkloadNames& names, const Json& source) {
  const Json header = {{"adapters", names.adapters},
                       {"classes", names.classes},
                       {"format", std::string(kFleetplanTraceFormatTag)},
                       {"source", source.is_null() ? Json::object() : source},
                       {"tenants", names.tenants},
                       {"version", kFleetplanTraceVersion}};
  auto text = CanonicalJson(header);
  FP_ASSERT(text.ok());  // names are strings and source came from JSON: always finite
  return *text + "\n";
}

std::string FormatTraceRecord(const Request& request, const WorkloadNames& names) {
  workload_internal::EscapedNames escaped;
  escaped.Update(names);
  std::string out;
  workload_internal::AppendRecord(request, escaped, &out);
  return out;
}

struct TraceWriter::Scratch {
  workload_internal::EscapedNames names;
  std::string buffer;
};

namespace {

// The record buffer goes to the body file in writes of about this size.
constexpr size_t kFlushBytes = size_t{1} << 20;
// Copy chunk when assembling header + body.
constexpr size_t kCopyBytes = size_t{1} << 20;

}  // namespace

TraceWriter::TraceWriter(std::string path, std::string body_path, std::unique_ptr<std::ostream> body)
    : path_(std::move(path)),
      body_path_(std::move(body_path)),
      body_(std::move(body)),
      scratch_(std::make_unique<Scratch>()) {}

TraceWriter::~TraceWriter() {
  if (!finished_) {
    body_.reset();
    std::error_code ignored;
    std::filesystem::remove(body_path_, ignored);
  }
}

// Why a stream write failed: errno as the failing call left it (the streams set no
// error of their own), or a plain "write failed" when it left none.
namespace {
std::string WriteError(int err) { return err != 0 ? std::generic_category().message(err) : "write failed"; }
}  // namespace

// The output follows core/output_file.h: "-" is stdout, a new or regular file is replaced
// atomically (header + body assembled next to it, then renamed), anything else (FIFO,
// device, a symlink's non-regular target) is written through. The body is buffered in a
// scratch file meanwhile: next to a regular target, in the temp folder otherwise.
Expected<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const OutputTarget target, ResolveOutput(path));
  std::string body_path;
  if (target.kind == OutputTarget::Kind::kReplace) {
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(target.path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    body_path = target.path + ".body.tmp";
  } else {
    body_path = ScratchPathFor("trace-body");
  }
  errno = 0;
  auto body = std::make_unique<std::ofstream>(body_path, std::ios::binary | std::ios::trunc);
  if (!*body) return InvalidInput(fmt::format("{}: cannot write the trace here: {}", path, WriteError(errno)));
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, body_path, std::move(body)));
}

Status TraceWriter::Flush() {
  errno = 0;
  body_->write(scratch_->buffer.data(), static_cast<std::streamsize>(scratch_->buffer.size()));
  scratch_->buffer.clear();
  if (!*body_) return InvalidInput(fmt::format("{}: cannot write: {}", body_path_, WriteError(errno)));
  return Status::Ok();
}

Status TraceWriter::Write(const Request& request, const WorkloadNames& names) {
  FP_ASSERT(!finished_);
  FP_ASSERT(request.id == written_);
  FP_ASSERT(written_ == 0 || request.arrival >= last_arrival_);
  scratch_->names.Update(names);
  workload_internal::AppendRecord(request, scratch_->names, &scratch_->buffer);
  ++written_;
  last_arrival_ = request.arrival;
  if (scratch_->buffer.size() >= kFlushBytes) return Flush();
  return Status::Ok();
}

Expected<std::string> TraceWriter::Finish(const WorkloadNames& names, const Json& source) {
  FP_ASSERT(!finished_);
  FP_RETURN_IF_ERROR(Flush());
  body_->flush();
  body_.reset();
  const std::string header = FormatTraceHeader(names, source);
  FP_ASSIGN_OR_RETURN(const OutputTarget target, ResolveOutput(path_));
  const bool replace = target.kind == OutputTarget::Kind::kReplace;
  const std::string temp_path = target.path + ".tmp";
  std::error_code ec;
  Sha256Stream digest;
  {
    std::ofstream file;
    errno = 0;
    if (target.kind != OutputTarget::Kind::kStdout) {
      file.open(replace ? temp_path : target.path, std::ios::binary | std::ios::trunc);
    }
    std::ostream& out = target.kind == OutputTarget::Kind::kStdout ? std::cout : file;
    std::ifstream body(body_path_, std::ios::binary);
    const auto fail = [&](std::string message) {
      if (file.is_open()) file.close();
      if (replace) std::filesystem::remove(temp_path, ec);
      return InvalidInput(std::move(message));
    };
    if (!out || !body) return fail(fmt::format("{}: cannot write the trace file here: {}", path_, WriteError(errno)));
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    digest.Update(header);
    std::vector<char> chunk(kCopyBytes);
    while (body && out) {
      body.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const auto got = static_cast<size_t>(body.gcount());
      if (got == 0) break;
      out.write(chunk.data(), static_cast<std::streamsize>(got));
      digest.Update(std::string_view(chunk.data(), got));
    }
    out.flush();
    bool ok = static_cast<bool>(out);
    int err = errno;
    if (file.is_open()) {
      file.close();
      ok = ok && !file.fail();
      if (err == 0) err = errno;
    }
    if (!ok) return fail(fmt::format("{}: cannot write: {}", path_, WriteError(err)));
  }
  if (replace) {
    std::filesystem::rename(temp_path, target.path, ec);
    if (ec) {
      const std::string why = ec.message();
      std::filesystem::remove(temp_path, ec);
      return InvalidInput(fmt::format("{}: cannot replace the file: {}", path_, why));
    }
  }
  std::filesystem::remove(body_path_, ec);
  finished_ = true;
  return digest.FinishDigest();
}

}  // namespace fleetplan
