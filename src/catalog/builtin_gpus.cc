// Built-in GPUs. Conventions (hardware.h): `memory` is the total the driver reports
// (nvidia-smi memory.total in MiB, rocm-smi VRAM total in bytes), bandwidth in decimal
// bytes/s, FLOP/s dense. Datasheets that state only "with sparsity" figures are halved,
// and the source says so.
#include <string>
#include <utility>
#include <vector>

#include "catalog/builtin.h"

namespace fleetplan::catalog_internal {
namespace {

constexpr double kTera = 1e12;  // datasheets state TFLOPS and TB/s in decimal units
constexpr double kGiga = 1e9;

// nvidia-smi reports memory.total in MiB.
constexpr Bytes NvidiaSmiMiB(int64_t mib) { return MiB(mib); }

// Every format with a standard serving kernel on the part: the tensor-core formats, plus
// int4 weight-only (dequantized into a bf16 matmul), which all listed GPUs run.
const std::vector<DType> kAmpereDTypes = {DType::kBf16, DType::kFp16, DType::kFp32, DType::kInt8,
                                          DType::kInt4};
const std::vector<DType> kFp8DTypes = {DType::kBf16, DType::kFp16, DType::kFp32,
                                       DType::kFp8,  DType::kInt8, DType::kInt4};
const std::vector<DType> kFp4DTypes = {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp8,
                                       DType::kInt8, DType::kInt4, DType::kFp4};

struct GpuFigures {
  const char* name;
  const char* description;
  const char* source;
  Bytes memory;
  double memory_bandwidth;
  double bf16_flops;
  double fp8_flops;
  double int8_ops;
  double fp4_flops;
  const std::vector<DType>* dtypes;
  const char* default_intra_link;
  bool peer_to_peer = true;
  const char* kernel_tables = "";
};

GpuSpec Make(const GpuFigures& f) {
  GpuSpec g;
  g.name = f.name;
  g.description = f.description;
  g.source = f.source;
  g.memory = f.memory;
  g.memory_bandwidth = f.memory_bandwidth;
  g.bf16_flops = f.bf16_flops;
  g.fp8_flops = f.fp8_flops;
  g.int8_ops = f.int8_ops;
  g.fp4_flops = f.fp4_flops;
  g.dtypes = *f.dtypes;
  g.default_intra_link = f.default_intra_link;
  g.peer_to_peer = f.peer_to_peer;
  g.kernel_tables = f.kernel_tables;
  return g;
}

}  // namespace

std::vector<GpuSpec> BuiltinGpus() {
  const GpuFigures figures[] = {
      {"a100-40g", "NVIDIA A100 40GB SXM4 (HBM2)",
       "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM: 1,555 GB/s, BF16 312 TFLOPS, "
       "INT8 624 TOPS dense); memory: nvidia-smi memory.total 40960 MiB",
       NvidiaSmiMiB(40960), 1555 * kGiga, 312 * kTera, 0, 624 * kTera, 0, &kAmpereDTypes,
       "nvlink3"},
      {"a100-80g", "NVIDIA A100 80GB SXM4 (HBM2e)",
       "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 2,039 GB/s, BF16 312 TFLOPS, "
       "INT8 624 TOPS dense); memory: nvidia-smi memory.total 81920 MiB",
       NvidiaSmiMiB(81920), 2039 * kGiga, 312 * kTera, 0, 624 * kTera, 0, &kAmpereDTypes,
       "nvlink3"},
      {"h100-sxm-80g", "NVIDIA H100 SXM5 80GB (HBM3)",
       "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (3.35 TB/s; BF16 1,979, FP8 3,958 "
       "TFLOPS and INT8 3,958 TOPS with sparsity, halved); memory: nvidia-smi memory.total "
       "81559 MiB",
       NvidiaSmiMiB(81559), 3350 * kGiga, 989.5 * kTera, 1979 * kTera, 1979 * kTera, 0, &kFp8DTypes,
       "nvlink4", /*peer_to_peer=*/true, "builtin:aiconfigurator/h100_sxm"},
      {"h100-pcie-80g", "NVIDIA H100 PCIe 80GB (HBM2e)",
       "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column (2 TB/s; BF16 1,513, FP8 3,026 "
       "TFLOPS and INT8 3,026 TOPS with sparsity, halved); memory: nvidia-smi memory.total "
       "81559 MiB",
       NvidiaSmiMiB(81559), 2000 * kGiga, 756.5 * kTera, 1513 * kTera, 1513 * kTera, 0, &kFp8DTypes,
       "pcie5"},
      {"h200-141g", "NVIDIA H200 SXM 141GB (HBM3e)",
       "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (4.8 TB/s; BF16 1,979, FP8 3,958 "
       "TFLOPS and INT8 3,958 TOPS with sparsity, halved); memory: nvidia-smi memory.total "
       "143771 MiB",
       NvidiaSmiMiB(143771), 4800 * kGiga, 989.5 * kTera, 1979 * kTera, 1979 * kTera, 0,
       &kFp8DTypes, "nvlink4", /*peer_to_peer=*/true, "builtin:aiconfigurator/h200_sxm"},
      {"b200-192g", "NVIDIA B200 SXM (192 GB HBM3e on package, 180 GB exposed)",
       "NVIDIA HGX B200 datasheet, per GPU = 1/8 of the 8-GPU figures (8 TB/s; FP16/BF16 36, FP8 "
       "72, INT8 72, FP4 144 PFLOPS with sparsity per 8 GPUs, halved); memory: nvidia-smi "
       "memory.total 183359 MiB",
       NvidiaSmiMiB(183359), 8000 * kGiga, 2250 * kTera, 4500 * kTera, 4500 * kTera, 9000 * kTera,
       &kFp4DTypes, "nvlink5"},
      {"l40s", "NVIDIA L40S 48GB (GDDR6, ECC on)",
       "NVIDIA L40S datasheet (864 GB/s; BF16 362.05, FP8 733 TFLOPS, INT8 733 TOPS dense); "
       "memory: nvidia-smi memory.total 46068 MiB",
       NvidiaSmiMiB(46068), 864 * kGiga, 362.05 * kTera, 733 * kTera, 733 * kTera, 0, &kFp8DTypes,
       "pcie4"},
      {"l4", "NVIDIA L4 24GB (GDDR6, ECC on)",
       "NVIDIA L4 Tensor Core GPU datasheet (300 GB/s; BF16 242, FP8 485 TFLOPS and INT8 485 TOPS "
       "with sparsity, halved); memory: nvidia-smi memory.total 23034 MiB",
       NvidiaSmiMiB(23034), 300 * kGiga, 121 * kTera, 242.5 * kTera, 242.5 * kTera, 0, &kFp8DTypes,
       "pcie4"},
      {"mi300x", "AMD Instinct MI300X 192GB (HBM3)",
       "AMD Instinct MI300X data sheet (5.3 TB/s; BF16 1,307.4, FP8 2,614.9 TFLOPS, INT8 2,614.9 "
       "TOPS dense); memory: rocm-smi VRAM Total Memory 205822885888 B",
       Bytes(205'822'885'888), 5300 * kGiga, 1307.4 * kTera, 2614.9 * kTera, 2614.9 * kTera, 0,
       &kFp8DTypes, "xgmi"},
      {"rtx4090", "NVIDIA GeForce RTX 4090 24GB (GDDR6X)",
       "NVIDIA Ada GPU architecture whitepaper, GeForce RTX 4090 (1,008 GB/s; BF16 165.2 and FP8 "
       "330.3 TFLOPS with FP32 accumulate, INT8 660.6 TOPS, dense); memory: nvidia-smi "
       "memory.total 24564 MiB; no peer-to-peer: GeForce drivers report cudaDeviceCanAccessPeer 0 "
       "for the RTX 4090 (NVIDIA developer forums), so NCCL moves data through host memory",
       NvidiaSmiMiB(24564), 1008 * kGiga, 165.2 * kTera, 330.3 * kTera, 660.6 * kTera, 0,
       &kFp8DTypes, "pcie4", /*peer_to_peer=*/false},
      {"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell 96GB (GDDR7)",
       "NVIDIA RTX PRO 6000 Blackwell datasheet (1,792 GB/s; 4,000 AI TOPS = FP4 with sparsity) "
       "and RTX Blackwell GPU architecture whitepaper (dense: BF16 503.8, FP8 1,007.6, FP4 "
       "2,015.2 TFLOPS, INT8 1,007.6 TOPS); memory: nvidia-smi memory.total 97887 MiB",
       NvidiaSmiMiB(97887), 1792 * kGiga, 503.8 * kTera, 1007.6 * kTera, 1007.6 * kTera,
       2015.2 * kTera, &kFp4DTypes, "pcie5"},
  };
  std::vector<GpuSpec> out;
  for (const GpuFigures& f : figures) out.push_back(Make(f));
  return out;
}

}  // namespace fleetplan::catalog_internal
