// GPU and link specs: the memory convention, throughput fallbacks, bandwidth parsing and
// the completeness of the built-in hardware.
#include "fleetplan/catalog/hardware.h"

#include <gtest/gtest.h>

#include <set>

#include "fleetplan/catalog/catalog.h"

namespace fleetplan {
namespace {

GpuSpec Gpu(std::string_view name) {
  Expected<GpuSpec> g = Catalog::Builtin().Gpu(name);
  EXPECT_TRUE(g.ok()) << name;
  return g.ok() ? *g : GpuSpec{};
}

TEST(Gpus, TheListedPartsAreBuiltIn) {
  std::set<std::string> names;
  for (const auto& [name, gpu] : Catalog::Builtin().gpus()) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"a100-40g", "a100-80g", "b200-192g", "h100-pcie-80g",
                                          "h100-sxm-80g", "h200-141g", "l4", "l40s", "mi300x",
                                          "rtx-pro-6000", "rtx4090"}));
}

TEST(Gpus, MemoryIsWhatTheDriverReports) {
  // nvidia-smi memory.total: 81559 MiB for an "80GB" H100, below 80 GiB.
  EXPECT_EQ(Gpu("h100-sxm-80g").memory.count(), 85'520'809'984);
  EXPECT_LT(Gpu("h100-sxm-80g").memory, GiB(80));
  EXPECT_EQ(Gpu("h200-141g").memory, MiB(143771));
  EXPECT_EQ(Gpu("b200-192g").memory, MiB(183359));
  EXPECT_EQ(Gpu("a100-80g").memory, GiB(80));
  EXPECT_EQ(Gpu("mi300x").memory.count(), 205'822'885'888);  // rocm-smi, exactly 196,288 MiB
  EXPECT_EQ(Gpu("mi300x").memory, MiB(196288));
}

TEST(Gpus, EveryFigureIsPositiveAndSourced) {
  const Catalog& c = Catalog::Builtin();
  for (const auto& [name, g] : c.gpus()) {
    EXPECT_EQ(g.name, name);
    EXPECT_FALSE(g.source.empty()) << name;
    EXPECT_FALSE(g.description.empty()) << name;
    EXPECT_GT(g.memory.count(), 0) << name;
    EXPECT_GT(g.memory_bandwidth, 0) << name;
    EXPECT_GT(g.bf16_flops, 0) << name;
    EXPECT_TRUE(g.Supports(DType::kBf16)) << name;
    EXPECT_TRUE(g.Supports(DType::kInt4)) << name;  // weight-only runs everywhere
    EXPECT_EQ(g.Supports(DType::kFp8), g.fp8_flops > 0) << name;
    EXPECT_EQ(g.Supports(DType::kFp4), g.fp4_flops > 0) << name;
    EXPECT_TRUE(c.Link(g.default_intra_link).ok()) << name;
  }
}

TEST(Gpus, DenseRatesFromTheDatasheets) {
  const GpuSpec h100 = Gpu("h100-sxm-80g");
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.bf16_flops, 989.5e12);
  EXPECT_DOUBLE_EQ(h100.fp8_flops, 1979e12);
  EXPECT_EQ(h100.default_intra_link, "nvlink4");
  EXPECT_DOUBLE_EQ(Gpu("a100-80g").bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(Gpu("b200-192g").fp4_flops, 9e15);
}

TEST(PeakFlops, NativeRateElseBf16) {
  const GpuSpec a100 = Gpu("a100-80g");
  EXPECT_DOUBLE_EQ(a100.PeakFlops(DType::kBf16), 312e12);
  EXPECT_DOUBLE_EQ(a100.PeakFlops(DType::kFp16), 312e12);
  EXPECT_DOUBLE_EQ(a100.PeakFlops(DType::kFp8), 312e12);  // no fp8 tensor cores: bf16 compute
  EXPECT_DOUBLE_EQ(a100.PeakFlops(DType::kInt8), 624e12);
  EXPECT_DOUBLE_EQ(a100.PeakFlops(DType::kInt4), 312e12);  // weight-only: bf16 compute
  EXPECT_DOUBLE_EQ(a100.PeakFlops(DType::kFp32), 156e12);  // TF32
  EXPECT_DOUBLE_EQ(Gpu("h100-sxm-80g").PeakFlops(DType::kFp8), 1979e12);
  EXPECT_DOUBLE_EQ(Gpu("b200-192g").PeakFlops(DType::kFp4), 9e15);
  EXPECT_DOUBLE_EQ(Gpu("h100-sxm-80g").PeakFlops(DType::kFp4), 989.5e12);
}

TEST(Links, TheListedClassesAreBuiltIn) {
  std::set<std::string> names;
  for (const auto& [name, link] : Catalog::Builtin().links()) names.insert(name);
  for (const char* expected : {"nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "ib-hdr-200",
                               "ib-ndr-400", "roce-100", "roce-400", "xgmi"}) {
    EXPECT_EQ(names.count(expected), 1u) << expected;
  }
}

TEST(Links, BandwidthIsPerDirectionPerGpu) {
  const Catalog& c = Catalog::Builtin();
  EXPECT_DOUBLE_EQ(c.Link("nvlink4")->bandwidth, 450e9);  // 900 GB/s bidirectional
  EXPECT_DOUBLE_EQ(c.Link("nvlink5")->bandwidth, 900e9);
  EXPECT_DOUBLE_EQ(c.Link("pcie5")->bandwidth, 64e9);
  EXPECT_DOUBLE_EQ(c.Link("ib-ndr-400")->bandwidth, 50e9);  // 400 Gb/s
  EXPECT_EQ(c.Link("ib-ndr-400")->kind, LinkKind::kInfiniband);
  EXPECT_EQ(c.Link("nvlink4")->latency, Ns(600));
  EXPECT_EQ(c.Link("roce-400")->latency, Ns(2700));
  for (const auto& [name, l] : c.links()) {
    EXPECT_GT(l.bandwidth, 0) << name;
    EXPECT_GT(l.latency, Duration()) << name;
    EXPECT_FALSE(l.source.empty()) << name;
  }
}

TEST(LinkKind, NamesRoundTripAndUnknownSuggests) {
  for (const std::string& name : LinkKindNames()) {
    Expected<LinkKind> k = ParseLinkKind(name);
    ASSERT_TRUE(k.ok()) << name;
    EXPECT_EQ(LinkKindName(*k), name);
  }
  Expected<LinkKind> bad = ParseLinkKind("infiniband2");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown link kind 'infiniband2'; did you mean 'infiniband'? (valid: nvlink, pcie, "
            "infiniband, roce, ethernet, xgmi)");
}

TEST(ParseBandwidth, BytesBitsAndBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("450GB/s"), 450e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("3.35TB/s"), 3.35e12);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("400Gb/s"), 50e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("25GiB/s"), 25.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("100 MB/s"), 100e6);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("512B/s"), 512);
}

TEST(ParseBandwidth, RejectsMissingUnitsAndJunk) {
  for (const char* bad :
       {"450", "450GB", "GB/s", "-1GB/s", "4.5.0GB/s", "450gb/s", "1e999GB/s", "450 GB/sec", ""}) {
    Expected<double> b = ParseBandwidth(bad);
    EXPECT_FALSE(b.ok()) << bad;
  }
  EXPECT_EQ(ParseBandwidth("450").status().message(),
            "expected a bandwidth with a unit per second (B/s, KB/s, MB/s, GB/s, TB/s, KiB/s .. "
            "TiB/s, or bits: Kb/s .. Tb/s), e.g. '450GB/s' or '400Gb/s', got '450'");
}

}  // namespace
}  // namespace fleetplan
