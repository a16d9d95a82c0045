// The catalog: named models, GPUs and links. Built-in entries (src/catalog/builtin_*.cc,
// each with its public source) plus user catalog files that add or override entries by
// name.
//
// User catalog file (YAML), every section optional (src/catalog/README.md documents every
// key):
//   models:
//     my-model: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128,
//                intermediate: 14336, vocab: 128256, max_context: 131072}
//   gpus:
//     my-gpu: {memory: 96GiB, memory_bandwidth: 4TB/s, bf16_tflops: 900,
//              default_intra_link: nvlink4}
//   links:
//     my-link: {kind: nvlink, bandwidth: 450GB/s, latency: 2us}
// Unknown keys are errors; every error is located (file:line:col, key path). An override
// replaces the whole entry and is listed in `overridden()` ("models.llama-3.1-8b (f.yaml)").
// Within one file, links are read before GPUs, so a GPU may name a link defined beside it.
// Thread model: immutable after loading; lookups are const. Builtin() is built once, on
// first use, thread-safely.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

class Catalog {
 public:
  // The built-in catalog.
  static const Catalog& Builtin();
  // Built-in plus the given user files, in order (later files override earlier ones).
  static Expected<Catalog> WithUserFiles(const std::vector<std::string>& paths);

  // Unknown names are location-less InvalidInput errors with did-you-mean and the list:
  // "unknown model 'lama-3.1-8b'; did you mean 'llama-3.1-8b'? (valid: ...)".
  Expected<ModelSpec> Model(std::string_view name) const;
  Expected<GpuSpec> Gpu(std::string_view name) const;
  Expected<LinkSpec> Link(std::string_view name) const;

  // Sorted by name.
  const std::map<std::string, ModelSpec>& models() const { return models_; }
  const std::map<std::string, GpuSpec>& gpus() const { return gpus_; }
  const std::map<std::string, LinkSpec>& links() const { return links_; }
  const std::vector<std::string>& overridden() const { return overridden_; }

  // The user catalog files a scenario's `catalog:` key names (one path or a list of
  // paths, each relative to `dir`, the scenario's folder, unless absolute), in order.
  // Absent or null: none. Errors located at the key: not a string or list of strings, an
  // empty path, a file that cannot be read (with the path it resolved to).
  static Expected<std::vector<std::string>> ScenarioCatalogPaths(const YamlNode& node, const std::string& dir);

  // Reads one model spec from YAML (used by catalog files and by a scenario's inline
  // `model.spec`). Located errors; the spec passes FindModelSpecProblem when returned.
  static Expected<ModelSpec> ParseModelSpec(const YamlNode& node, std::string name);

 private:
  Status AddUserFile(const std::string& path);
  std::map<std::string, ModelSpec> models_;
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, LinkSpec> links_;
  std::vector<std::string> overridden_;
};

}  // namespace fleetplan
