// Hand-built model and GPU specs for the memory tests, so they do not depend on catalog
// data. Shapes follow the public configs named beside them.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/catalog/model.h"
#include "fleetplan/memory/inputs.h"

namespace fleetplan::memory_test {

// Llama-3.1-70B shape (the Atlas reference model): 70,553,706,496 parameters.
inline ModelSpec Dense70b() {
  ModelSpec m;
  m.name = "dense-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = 28672;
  m.vocab = 128256;
  m.max_context = 131072;
  return m;
}

// A small MoE in the Mixtral-8x7B style (8 experts, top-2), 32 layers.
inline ModelSpec SmallMoe() {
  ModelSpec m;
  m.name = "moe-8x";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = 14336;
  m.vocab = 32000;
  m.max_context = 32768;
  m.moe = MoeSpec{.experts = 8, .experts_per_token = 2, .expert_intermediate = 14336};
  return m;
}

// DeepSeek-V3-like MLA attention on a small dense body.
inline ModelSpec MlaModel() {
  ModelSpec m;
  m.name = "mla-small";
  m.layers = 4;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.head_dim = 128;
  m.intermediate = 8192;
  m.vocab = 32000;
  m.max_context = 16384;
  m.mla = MlaSpec{.q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
                  .qk_rope_head_dim = 64, .v_head_dim = 128};
  return m;
}

// Gemma-2-27B-like interleaving: 46 layers, every 2nd global, window 4096.
inline ModelSpec Windowed() {
  ModelSpec m;
  m.name = "windowed";
  m.layers = 46;
  m.hidden = 4608;
  m.heads = 32;
  m.kv_heads = 16;
  m.head_dim = 128;
  m.intermediate = 36864;
  m.vocab = 256000;
  m.tied_embeddings = true;
  m.max_context = 8192;
  m.sliding_window = 4096;
  m.global_every = 2;
  return m;
}

// An 80 GiB GPU (round figure, so the arithmetic reads well).
inline GpuSpec Gpu80() {
  GpuSpec g;
  g.name = "gpu-80g";
  g.memory = GiB(80);
  return g;
}

inline MemoryInputs Inputs(ModelSpec m, int64_t tp, int64_t pp = 1) {
  MemoryInputs in;
  in.model = std::move(m);
  in.gpu = Gpu80();
  in.layout.tp = tp;
  in.layout.pp = pp;
  return in;
}

// Tests print the arithmetic they check, so a failing run shows the numbers.
template <typename... Args>
void Show(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(format, std::forward<Args>(args)...);
  fmt::print("\n");
}

}  // namespace fleetplan::memory_test
