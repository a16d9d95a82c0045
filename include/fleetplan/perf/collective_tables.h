// Measured collective times: one curve (time vs message bytes) per (implementation,
// operation, ranks, nodes), read from the public profile formats, and the communication a
// tensor- and pipeline-parallel forward pass issues, priced from them or by alpha-beta.
//
// Formats, told apart by their CSV header (plain or gzip; docs/step-models.md
// "Collectives from measured tables" has an example row of each):
//
//   aiconfigurator nccl_perf        framework,version,device,op_name,kernel_source,nccl_dtype,
//                                   num_gpus,message_size,latency
//       NCCL (nccl-tests), one node; message_size in elements of nccl_dtype, latency in ms.
//   aiconfigurator custom_allreduce framework,version,device,op_name,kernel_source,
//                                   allreduce_dtype,num_gpus,message_size,latency,backend
//       vLLM's tensor_model_parallel_all_reduce (its custom kernel below its size limit),
//       one node; only `backend = vllm_graph` rows (CUDA-graph captured: the eager launch
//       penalty is the CUDA-graph decorator's, perf/cuda_graphs.h); elements, ms.
//   APEX+                           gpu,num_nodes,num_gpus_per_node,dtype,size(kb),time(us)
//       NCCL; the operation is the file name (all_reduce, all_gather, reduce_scatter,
//       alltoall, sendrecv, optionally .csv.gz); size in KiB, time in µs.
//   Vidur                           ,time_stats.<op>.min,...,median,std,rank,num_workers,
//                                   size,collective,devices_per_node,max_devices_per_node
//       NCCL; size in bytes, the median in ms; nodes = num_workers / devices_per_node.
//
// Only 2-byte element types are read (half, float16, bfloat16: the activations are bf16);
// rows of other types are skipped. Message sizes follow nccl-tests: the buffer reduced
// (all-reduce), the gathered output (all-gather), the input per rank (reduce-scatter),
// what one rank sends (all-to-all, send/recv). Rows of one curve measured at the same size
// are averaged. Two files stating the same curve are an error naming both.
//
// Lookup: linear in bytes between measured sizes; below the first size the first value;
// beyond the last the last segment's slope continues and the caller's `outside` is set.
//
// Thread model: immutable after loading; safe to share. Lookups do not allocate.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"
#include "fleetplan/core/units.h"
#include "fleetplan/perf/collectives.h"

namespace fleetplan {

// Values reach reports by name; never renumber.
enum class CollectiveOp : int { kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kAllToAll = 3, kSendRecv = 4 };
std::string_view CollectiveOpName(CollectiveOp op);

// kNccl: NCCL's collective. kVllm: vLLM's tensor-parallel all-reduce as the engine calls
// it (custom kernel below its limit), graph captured.
enum class CollectiveImpl : int { kNccl = 0, kVllm = 1 };
std::string_view CollectiveImplName(CollectiveImpl impl);

struct CollectiveKey {
  CollectiveImpl impl = CollectiveImpl::kNccl;
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t ranks = 2;  // GPUs taking part (2 for send/recv)
  int64_t nodes = 1;  // nodes they span
  auto operator<=>(const CollectiveKey&) const = default;
};

struct CollectiveCurve {
  std::vector<double> bytes;  // ascending, distinct, >= 1 entry
  std::vector<double> ns;     // measured time at bytes[i]
  std::string origin;         // the file it came from
  // REQUIRES: message >= 0.
  Duration At(Bytes message, bool* outside) const;
};

class CollectiveTables {
 public:
  // Reads every path: a CSV file (plain or .gz) or a folder, of which every *.csv and
  // *.csv.gz below it is read in sorted path order. A file whose header is none of the
  // formats above is an error when named directly and skipped inside a folder. Errors
  // are located (file:line:col) or name the file.
  static Expected<CollectiveTables> Load(const std::vector<std::string>& paths);

  // nullptr when no table states this curve.
  const CollectiveCurve* Find(const CollectiveKey& key) const;
  const std::vector<std::string>& files() const { return files_; }
  // The paths as given, for reports.
  const std::vector<std::string>& paths() const { return paths_; }
  // One entry per curve: impl, op, ranks, nodes, points, bytes range, origin.
  Json Describe() const;

 private:
  std::map<CollectiveKey, CollectiveCurve> curves_;
  std::vector<std::string> files_;
  std::vector<std::string> paths_;
};

// The ranks of a tensor-parallel group and what joins them, and the pipeline boundary.
struct ParallelLinks {
  int64_t tp = 1;              // ranks of one stage, >= 1
  int64_t pp = 1;              // pipeline stages, >= 1
  LinkCost tp_link;            // REQUIRES bandwidth > 0 when tp > 1
  LinkCost pp_link;            // REQUIRES bandwidth > 0 when pp > 1
  bool tp_nvlink = false;      // the tp ranks are fully connected by NVLink
  bool pp_spans_nodes = false; // consecutive stages sit on different nodes
  bool peer_to_peer = true;    // the GPUs reach each other's memory (PCIe P2P or NVLink)
};

// Where one collective's time came from (reports name it).
enum class CommSource : int { kNone = 0, kTable = 1, kAlphaBeta = 2 };

// Prices the communication of a forward pass as vLLM issues it:
//   tensor parallel   kTpAllReducesPerLayer all-reduces of the layer's activations
//                     (tokens × hidden × bytes) per layer, by vLLM's choice of custom
//                     kernel or NCCL (collectives.h); the vLLM table for the custom path,
//                     the NCCL table otherwise, alpha-beta over the tp link (host staged
//                     without peer-to-peer access) when no table states the curve;
//   pipeline parallel kPpTensorsPerBoundary send/recv of tokens × hidden × bytes at each
//                     of the pp − 1 stage boundaries (hidden states and residual), from
//                     a send/recv table or alpha-beta over the pp link.
// Table lookups that leave the measured sizes set `outside`.
class ParallelComm {
 public:
  ParallelComm() = default;
  // `tables` may be null (alpha-beta only).
  ParallelComm(ParallelLinks links, std::shared_ptr<const CollectiveTables> tables)
      : links_(links), tables_(std::move(tables)) {}

  Duration TpAllReduce(Bytes message, bool* outside, CommSource* source = nullptr) const;
  Duration PpSendRecv(Bytes message, bool* outside, CommSource* source = nullptr) const;
  const ParallelLinks& links() const { return links_; }
  const CollectiveTables* tables() const { return tables_.get(); }
  Json Describe() const;

 private:
  ParallelLinks links_;
  std::shared_ptr<const CollectiveTables> tables_;
};

// vLLM's pipeline stages hand over the hidden states and the residual (IntermediateTensors
// of decoder models), one send/recv each.
inline constexpr int64_t kPpTensorsPerBoundary = 2;

}  // namespace fleetplan
