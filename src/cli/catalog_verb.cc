// `fleetplan catalog models|gpus|links [NAME...] [--json] [--catalog FILE]...`: lists the
// catalog (built-in entries plus user files) as an aligned table, or one entry per NAME in
// detail; --json prints the same entries as JSON (catalog/catalog_json.h). Unknown names
// are invalid input (exit 3) with a did-you-mean.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "fleetplan/catalog/catalog.h"
#include "fleetplan/catalog/catalog_json.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/units_parse.h"

namespace fleetplan::cli {
namespace {

struct CatalogFlags {
  std::vector<std::string> names;
  std::vector<std::string> catalogs;
  bool json = false;
};

// ---- Text formatting ---------------------------------------------------------------------

struct Column {
  std::string title;
  bool right_aligned = false;
};

// Rows of cells under titles; columns as wide as their widest cell, two spaces apart.
class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  std::string Render() const {
    std::vector<size_t> widths;
    for (const Column& c : columns_) widths.push_back(c.title.size());
    for (const auto& row : rows_) {
      for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
    }
    std::vector<std::string> titles;
    for (const Column& c : columns_) titles.push_back(c.title);
    std::string out = RenderRow(titles, widths);
    for (const auto& row : rows_) out += RenderRow(row, widths);
    return out;
  }

 private:
  std::string RenderRow(const std::vector<std::string>& cells,
                        const std::vector<size_t>& widths) const {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) line += "  ";
      const bool last = i + 1 == cells.size();
      if (columns_[i].right_aligned) {
        line += fmt::format("{:>{}}", cells[i], widths[i]);
      } else {
        line += last ? cells[i] : fmt::format("{:<{}}", cells[i], widths[i]);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  }

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

std::string Count(int64_t n) {
  constexpr double kBillion = 1e9;
  constexpr double kMillion = 1e6;
  const auto v = static_cast<double>(n);
  if (v >= kBillion) return fmt::format("{:.2f}B", v / kBillion);
  if (v >= kMillion) return fmt::format("{:.2f}M", v / kMillion);
  return fmt::format("{}", n);
}

std::string OrDash(int64_t n, std::string text) { return n == 0 ? "-" : text; }

// Figures in the units datasheets use: "989.5" TFLOPS, "3.35 TB/s", "450 GB/s".
std::string Tera(double v) { return v == 0 ? "-" : fmt::format("{:g}", v / 1e12); }
std::string Bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return fmt::format("{:g} TB/s", bytes_per_s / 1e12);
  return fmt::format("{:g} GB/s", bytes_per_s / 1e9);
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

// Each line of `text` (newline-terminated) indented by two spaces.
std::string Indent(const std::string& text) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    out += "  " + text.substr(start, end - start) + "\n";
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// ---- Models ------------------------------------------------------------------------------

std::string FfnCell(const ModelSpec& m) {
  if (!m.moe) return fmt::format("{}", m.intermediate);
  const MoeSpec& e = *m.moe;
  std::string out =
      fmt::format("{}x{} top-{}", e.experts, e.expert_intermediate, e.experts_per_token);
  if (e.shared_experts > 0) out += fmt::format(" +{} shared", e.shared_experts);
  if (e.first_dense_layers > 0) out += fmt::format(", {} dense", e.first_dense_layers);
  return out;
}

std::string FeaturesCell(const ModelSpec& m) {
  std::vector<std::string> parts;
  if (m.sliding_window > 0) {
    parts.push_back(
        fmt::format("window {} on {}/{} layers", m.sliding_window, WindowedLayers(m), m.layers));
  }
  if (m.mla)
    parts.push_back(fmt::format("latent {}+{}", m.mla->kv_lora_rank, m.mla->qk_rope_head_dim));
  if (m.vision) {
    parts.push_back(fmt::format("vision {}L/{}, {} tok/img", m.vision->layers, m.vision->hidden,
                                m.vision->tokens_per_image));
  }
  return parts.empty() ? "-" : Join(parts, "; ");
}

// KV bytes one token adds over all layers, in bf16, before sharding.
Bytes KvPerTokenBf16(const ModelSpec& m) {
  return BytesFor(DType::kBf16, KvElementsPerTokenPerLayer(m) * m.layers);
}

std::string ModelTable(const std::vector<ModelSpec>& models) {
  Table t({{"name"},
           {"attn"},
           {"layers", true},
           {"hidden", true},
           {"heads/kv", true},
           {"ffn"},
           {"params", true},
           {"active", true},
           {"published", true},
           {"kv/token bf16", true},
           {"context", true},
           {"dtype"},
           {"features"}});
  for (const ModelSpec& m : models) {
    const ParamBreakdown p = CountParams(m);
    t.Add({m.name, std::string(AttentionKindName(m)), fmt::format("{}", m.layers),
           fmt::format("{}", m.hidden), fmt::format("{}/{}", m.heads, m.kv_heads), FfnCell(m),
           Count(p.total()), Count(p.active_per_token),
           OrDash(m.published_params, Count(m.published_params)), FormatBytes(KvPerTokenBf16(m)),
           OrDash(m.max_context, fmt::format("{}", m.max_context)),
           std::string(DTypeName(m.native_dtype)), FeaturesCell(m)});
  }
  return t.Render();
}

std::string ModelDetail(const ModelSpec& m) {
  const ParamBreakdown p = CountParams(m);
  std::string out = fmt::format("{}: {}\n  source: {}\n", m.name, m.description, m.source);
  out +=
      fmt::format("  shape: {} layers, hidden {}, {} heads / {} kv heads x {}, ffn {}, vocab {}\n",
                  m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, FfnCell(m), m.vocab);
  out += fmt::format(
      "  attention: {}; {}; kv elements per token per layer {} ({} per token in "
      "bf16)\n",
      AttentionKindName(m), FeaturesCell(m), KvElementsPerTokenPerLayer(m),
      FormatBytes(KvPerTokenBf16(m)));
  Table t({{"parameters"}, {"count", true}});
  const std::pair<const char*, int64_t> rows[] = {
      {"embedding", p.embedding},
      {"lm_head", p.lm_head},
      {"attention", p.attention},
      {"ffn_dense", p.ffn_dense},
      {"ffn_experts", p.ffn_experts},
      {"ffn_shared", p.ffn_shared},
      {"router", p.router},
      {"norms", p.norms},
      {"vision_encoder", p.vision_encoder},
      {"vision_projector", p.vision_projector},
      {"total", p.total()},
      {"active_per_token", p.active_per_token},
  };
  for (const auto& [label, value] : rows) t.Add({label, fmt::format("{}", value)});
  t.Add({"published", OrDash(m.published_params, fmt::format("{}", m.published_params))});
  t.Add({"published_active",
         OrDash(m.published_active_params, fmt::format("{}", m.published_active_params))});
  out += Indent(t.Render());
  return out;
}

// ---- GPUs and links ----------------------------------------------------------------------

std::string DTypeList(const GpuSpec& g) {
  std::vector<std::string> names;
  for (DType t : g.dtypes) names.emplace_back(DTypeName(t));
  return Join(names, ",");
}

// The step model a scenario on `g` gets when it names none (docs/step-models.md "Which
// default each GPU gets"): the measured kernels where tables ship, else the roofline.
std::string DefaultStepModelOf(const GpuSpec& g) {
  return g.kernel_tables.empty() ? "roofline" : "measured kernels";
}

std::string GpuTable(const std::vector<GpuSpec>& gpus) {
  Table t({{"name"},
           {"memory", true},
           {"bandwidth", true},
           {"bf16 TFLOPS", true},
           {"fp8 TFLOPS", true},
           {"int8 TOPS", true},
           {"fp4 TFLOPS", true},
           {"link"},
           {"default step model"},
           {"dtypes"}});
  for (const GpuSpec& g : gpus) {
    t.Add({g.name, FormatBytes(g.memory), Bandwidth(g.memory_bandwidth), Tera(g.bf16_flops),
           Tera(g.fp8_flops), Tera(g.int8_ops), Tera(g.fp4_flops), g.default_intra_link,
           DefaultStepModelOf(g), DTypeList(g)});
  }
  return t.Render();
}

std::string GpuDetail(const GpuSpec& g) {
  return fmt::format(
      "{}: {}\n  source: {}\n  memory: {} ({} bytes)\n  bandwidth: {}\n"
      "  dense TFLOPS: bf16 {}, fp8 {}, int8 {} (TOPS), fp4 {}\n"
      "  dtypes: {}\n  default intra-node link: {}\n  default step model: {}\n",
      g.name, g.description, g.source, FormatBytes(g.memory), g.memory.count(),
      Bandwidth(g.memory_bandwidth), Tera(g.bf16_flops), Tera(g.fp8_flops), Tera(g.int8_ops),
      Tera(g.fp4_flops), DTypeList(g), g.default_intra_link,
      g.kernel_tables.empty() ? std::string("roofline (no kernel tables ship for this GPU)")
                              : fmt::format("aiconfigurator on the kernel tables that ship with fleetplan ({})",
                                            g.kernel_tables));
}

std::string LinkTable(const std::vector<LinkSpec>& links) {
  Table t({{"name"}, {"kind"}, {"bandwidth/dir", true}, {"latency", true}, {"description"}});
  for (const LinkSpec& l : links) {
    t.Add({l.name, std::string(LinkKindName(l.kind)), Bandwidth(l.bandwidth),
           FormatDuration(l.latency), l.description});
  }
  return t.Render();
}

std::string LinkDetail(const LinkSpec& l) {
  return fmt::format(
      "{}: {}\n  source: {}\n  kind: {}\n  bandwidth per direction per GPU: {}\n"
      "  latency: {}\n",
      l.name, l.description, l.source, LinkKindName(l.kind), Bandwidth(l.bandwidth),
      FormatDuration(l.latency));
}

// ---- One listing per entry kind -----------------------------------------------------------

// How one kind of entry is listed: where it lives in the catalog and how it prints. The
// three instances below are the only ones; the verb code is shared.
template <typename Spec>
struct Listing {
  const char* section;  // "models": JSON key and subcommand name
  const std::map<std::string, Spec>& (Catalog::*all)() const;
  Expected<Spec> (Catalog::*find)(std::string_view) const;
  Json (*json)(const Spec&);
  std::string (*table)(const std::vector<Spec>&);
  std::string (*detail)(const Spec&);
};

const Listing<ModelSpec> kModels{"models",       &Catalog::models, &Catalog::Model,
                                 &ModelSpecJson, &ModelTable,      &ModelDetail};
const Listing<GpuSpec> kGpus{"gpus",       &Catalog::gpus, &Catalog::Gpu,
                             &GpuSpecJson, &GpuTable,      &GpuDetail};
const Listing<LinkSpec> kLinks{"links",       &Catalog::links, &Catalog::Link,
                               &LinkSpecJson, &LinkTable,      &LinkDetail};

template <typename Spec>
Expected<std::vector<Spec>> Select(const Listing<Spec>& listing, const Catalog& catalog,
                                   const std::vector<std::string>& names) {
  std::vector<Spec> out;
  if (names.empty()) {
    for (const auto& [name, spec] : (catalog.*listing.all)()) out.push_back(spec);
    return out;
  }
  for (const std::string& name : names) {
    FP_ASSIGN_OR_RETURN(Spec spec, (catalog.*listing.find)(name));
    out.push_back(std::move(spec));
  }
  return out;
}

std::string OverriddenNote(const Catalog& catalog) {
  if (catalog.overridden().empty()) return "";
  return "overridden by user catalog files: " + Join(catalog.overridden(), ", ") + "\n";
}

template <typename Spec>
Status RunListing(const Listing<Spec>& listing, const CatalogFlags& f, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(const Catalog catalog, Catalog::WithUserFiles(f.catalogs));
  FP_ASSIGN_OR_RETURN(const std::vector<Spec> entries, Select(listing, catalog, f.names));
  if (f.json) {
    Json entries_json = Json::object();
    for (const Spec& s : entries) entries_json[s.name] = listing.json(s);
    const Json doc{{listing.section, entries_json}, {"overridden", catalog.overridden()}};
    FP_ASSIGN_OR_RETURN(const std::string text, PrettyJson(doc));
    out << text;
    return Status::Ok();
  }
  if (f.names.empty()) {
    out << listing.table(entries);
  } else {
    for (size_t i = 0; i < entries.size(); ++i)
      out << (i > 0 ? "\n" : "") << listing.detail(entries[i]);
  }
  out << OverriddenNote(catalog);
  return Status::Ok();
}

template <typename Spec>
void AddListing(CLI::App* parent, const Listing<Spec>& listing, const std::string& help,
                VerbAction& action) {
  CLI::App* cmd = parent->add_subcommand(listing.section, help);
  auto flags = std::make_shared<CatalogFlags>();
  cmd->add_option("names", flags->names, "Entries to show in detail (default: a table of all)");
  cmd->add_option("--catalog", flags->catalogs,
                  "User catalog file (YAML) adding or overriding entries; repeatable, later "
                  "files win")
      ->allow_extra_args(false);  // one file per --catalog, so NAMEs may follow it
  cmd->add_flag("--json", flags->json, "Print JSON instead of text");
  cmd->callback([flags, &listing, &action] {
    action = [flags, &listing](std::ostream& out, std::ostream& /*err*/) {
      return RunListing(listing, *flags, out);
    };
  });
}

}  // namespace

void RegisterCatalogVerb(CLI::App& app, VerbAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "catalog",
      "List the built-in models, GPUs and links (plus user catalog files), with the source of "
      "every figure. Exit 0 done, 2 usage, 3 invalid input.");
  cmd->require_subcommand(1);
  // Added before its listings, so `catalog models --help` ends with it too.
  cmd->footer(
      "Examples:\n"
      "  fleetplan catalog models\n"
      "  fleetplan catalog gpus h100-sxm-80g\n"
      "  fleetplan catalog links --catalog lab-catalog.yaml --json");
  AddListing(cmd, kModels,
             "Models: shape, parameters computed from it (total, active), KV per token", action);
  AddListing(cmd, kGpus, "GPUs: memory as the driver reports it, bandwidth, dense FLOP/s", action);
  AddListing(cmd, kLinks, "Links: bandwidth per direction per GPU, latency", action);
}

}  // namespace fleetplan::cli
