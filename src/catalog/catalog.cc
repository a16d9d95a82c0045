#include "fleetplan/catalog/catalog.h"

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "catalog/builtin.h"
#include "catalog/readers.h"
#include "fleetplan/core/printable_name.h"
#include "fleetplan/core/error.h"

namespace fleetplan {
namespace {

template <typename Spec>
std::vector<std::string> Names(const std::map<std::string, Spec>& entries) {
  std::vector<std::string> out;
  out.reserve(entries.size());
  for (const auto& [name, spec] : entries) out.push_back(name);
  return out;
}

template <typename Spec>
Expected<Spec> Find(const std::map<std::string, Spec>& entries, std::string_view what,
                    std::string_view name) {
  const auto it = entries.find(std::string(name));
  if (it != entries.end()) return it->second;
  return InvalidInput(UnknownNameMessage(what, name, Names(entries)));
}

// Entry names are the keys users type on command lines: they must be non-empty and must not
// contain whitespace (a typo like "h100 sxm" should fail here, not in a lookup later).
Status CheckEntryName(const YamlNode& entry, const std::string& name) {
  const bool bad = name.empty() || name.find_first_of(" \t\n") != std::string::npos;
  if (!bad) {
    Status printable = CheckPrintableName(name);
    return printable.ok() ? printable : entry.Error(fmt::format("invalid entry name: {}", printable.message()));
  }
  return entry.Error(
      fmt::format("invalid entry name '{}': names are non-empty and contain no "
                  "whitespace",
                  name));
}

// Reads one section (`models`, `gpus` or `links`) into `entries`; `read(node, name)` parses
// an entry. Existing names are replaced and recorded in `overridden`.
template <typename Spec, typename Reader>
Status ReadSection(const YamlNode& section, std::map<std::string, Spec>& entries,
                   std::vector<std::string>& overridden, const Reader& read) {
  if (!section.present() || section.IsNull()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(const auto items, section.Entries());
  for (const auto& [name, node] : items) {
    FP_RETURN_IF_ERROR(CheckEntryName(node, name));
    FP_ASSIGN_OR_RETURN(Spec spec, read(node, name));
    if (entries.count(name) > 0) {
      overridden.push_back(fmt::format("{}.{} ({})", section.path(), name, node.location().file));
    }
    entries.insert_or_assign(name, std::move(spec));
  }
  return Status::Ok();
}

}  // namespace

const Catalog& Catalog::Builtin() {
  static const Catalog builtin = [] {
    Catalog c;
    for (ModelSpec& m : catalog_internal::BuiltinModels()) {
      FP_ASSERT(!FindModelSpecProblem(m));
      FP_ASSERT(c.models_.count(m.name) == 0);
      c.models_.emplace(m.name, std::move(m));
    }
    for (LinkSpec& l : catalog_internal::BuiltinLinks()) {
      FP_ASSERT(c.links_.count(l.name) == 0);
      c.links_.emplace(l.name, std::move(l));
    }
    for (GpuSpec& g : catalog_internal::BuiltinGpus()) {
      FP_ASSERT(c.gpus_.count(g.name) == 0 && c.links_.count(g.default_intra_link) == 1);
      c.gpus_.emplace(g.name, std::move(g));
    }
    return c;
  }();
  return builtin;
}

Expected<Catalog> Catalog::WithUserFiles(const std::vector<std::string>& paths) {
  Catalog catalog = Builtin();
  for (const std::string& path : paths) FP_RETURN_IF_ERROR(catalog.AddUserFile(path));
  return catalog;
}

Expected<std::vector<std::string>> Catalog::ScenarioCatalogPaths(const YamlNode& node, const std::string& dir) {
  std::vector<std::string> paths;
  if (!node.present() || node.IsNull()) return paths;
  std::vector<YamlNode> items;
  if (node.IsSequence()) {
    FP_ASSIGN_OR_RETURN(items, node.Items());
  } else {
    items.push_back(node);
  }
  for (const YamlNode& item : items) {
    if (!item.IsScalar()) return item.Error("expected a catalog file path (or a list of them)");
    FP_ASSIGN_OR_RETURN(std::string path, item.AsString());
    if (path.empty()) return item.Error("expected a non-empty catalog file path");
    const std::filesystem::path resolved =
        std::filesystem::path(path).is_absolute() || dir.empty() ? std::filesystem::path(path)
                                                                 : std::filesystem::path(dir) / path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(resolved, ec)) {
      return item.Error(fmt::format("cannot read catalog file '{}' (paths are relative to the scenario's folder)",
                                    resolved.string()));
    }
    paths.push_back(resolved.string());
  }
  return paths;
}

Status Catalog::AddUserFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const YamlDocument doc, YamlDocument::LoadFile(path));
  const YamlNode root = doc.root();
  FP_RETURN_IF_ERROR(root.CheckKeys({"models", "gpus", "links"}));
  // Links first, so GPUs in the same file may name them as default_intra_link.
  FP_RETURN_IF_ERROR(ReadSection(root["links"], links_, overridden_,
                                 [](const YamlNode& node, const std::string& name) {
                                   return catalog_internal::ReadLinkSpec(node, name);
                                 }));
  FP_RETURN_IF_ERROR(ReadSection(root["gpus"], gpus_, overridden_,
                                 [this](const YamlNode& node, const std::string& name) {
                                   return catalog_internal::ReadGpuSpec(node, name, links_);
                                 }));
  return ReadSection(
      root["models"], models_, overridden_,
      [](const YamlNode& node, const std::string& name) { return ParseModelSpec(node, name); });
}

Expected<ModelSpec> Catalog::Model(std::string_view name) const {
  return Find(models_, "model", name);
}

Expected<GpuSpec> Catalog::Gpu(std::string_view name) const { return Find(gpus_, "gpu", name); }

Expected<LinkSpec> Catalog::Link(std::string_view name) const { return Find(links_, "link", name); }

}  // namespace fleetplan
