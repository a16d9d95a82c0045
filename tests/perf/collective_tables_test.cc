// Measured collective tables and the TP / PP communication priced from them: every format
// read from a hand-made fixture (a row exactly, an interpolated size, the edge slope),
// vLLM's choice of custom all-reduce or NCCL, the alpha-beta fallback, the host-staged
// path of GPUs without peer-to-peer access, PP send/recv, load errors, and one row of each
// shared table.
#include "fleetplan/perf/collective_tables.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/shared_data.h"

namespace fleetplan {
namespace {

using ::testing::HasSubstr;

// aiconfigurator nccl_perf: 4 GPUs, all_reduce half at 1024 and 4096 elements (2 KiB,
// 8 KiB) = 10 and 16 us; an int8 row that must be skipped; an all_gather row.
constexpr const char* kAicNccl =
    "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency\n"
    "TRTLLM,2.29.2,GPU,all_reduce,NCCL,half,4,1024,0.010\n"
    "TRTLLM,2.29.2,GPU,all_reduce,NCCL,half,4,4096,0.016\n"
    "TRTLLM,2.29.2,GPU,all_reduce,NCCL,int8,4,1024,0.5\n"
    "TRTLLM,2.29.2,GPU,all_gather,NCCL,half,4,1024,0.007\n";

// aiconfigurator custom_allreduce_perf: 2 GPUs, graph rows 4 us at 1024 elements and 6 us
// at 4096; an eager row that must be skipped.
constexpr const char* kAicVllm =
    "framework,version,device,op_name,kernel_source,allreduce_dtype,num_gpus,message_size,latency,backend\n"
    "vLLM,0.24.0,GPU,all_reduce,vLLM_custom_graph,bfloat16,2,1024,0.004,vllm_graph\n"
    "vLLM,0.24.0,GPU,all_reduce,vLLM_custom_eager,bfloat16,2,1024,0.020,vllm_eager\n"
    "vLLM,0.24.0,GPU,all_reduce,vLLM_custom_graph,bfloat16,2,4096,0.006,vllm_graph\n";

// APEX+ sendrecv.csv: 2 GPUs on one node, 6 us at 0 KiB and 8 us at 4 KiB (half); a float row.
constexpr const char* kApexSendRecv =
    "gpu,num_nodes,num_gpus_per_node,dtype,size(kb),time(us)\n"
    "G,1,2,half,0,6.0\n"
    "G,1,2,half,4,8.0\n"
    "G,1,2,float,4,99\n"
    "G,2,1,half,4,30.0\n";

// Vidur all_reduce.csv: medians 0.028 ms (2 KiB) and 0.030 / 0.034 ms twice at 10 KiB
// (averaged: 0.032), 2 workers on one node; one row of 2 workers on 2 nodes.
constexpr const char* kVidur =
    ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,"
    "time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"
    "0,0.028,0.028,0.028,0.028,0.0,0,2,2048,all_reduce,2,4\n"
    "1,0.029,0.031,0.030,0.030,0.001,0,2,10240,all_reduce,2,4\n"
    "2,0.033,0.035,0.034,0.034,0.001,0,2,10240,all_reduce,2,4\n"
    "3,0.050,0.050,0.050,0.050,0.0,0,2,2048,all_reduce,1,4\n";

class CollectiveTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("collective_tables_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  CollectiveTables Load(const std::vector<std::string>& paths) {
    auto t = CollectiveTables::Load(paths);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  }
  std::filesystem::path dir_;
};

constexpr CollectiveKey kNccl4{CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 4, 1};

TEST_F(CollectiveTablesTest, AiconfiguratorNcclRowExactlyInterpolatedAndBeyond) {
  const CollectiveTables t = Load({Write("nccl_perf.csv", kAicNccl)});
  const CollectiveCurve* c = t.Find(kNccl4);
  ASSERT_NE(c, nullptr);
  bool outside = false;
  // A measured row: 1024 half elements = 2048 B -> 0.010 ms.
  EXPECT_EQ(c->At(Bytes(2048), &outside), Us(10));
  // Between rows: 5120 B is half way from 2048 to 8192 -> 10 + 6 / 2 = 13 us.
  EXPECT_EQ(c->At(Bytes(5120), &outside), Us(13));
  // Below the first size: the first value.
  EXPECT_EQ(c->At(Bytes(100), &outside), Us(10));
  EXPECT_FALSE(outside);
  // Beyond the last: the last slope continues (6 us per 6144 B), flagged.
  EXPECT_EQ(c->At(Bytes(16384), &outside), Us(24));
  EXPECT_TRUE(outside);
  // The int8 row is not a 2-byte type: one curve of two points.
  EXPECT_EQ(c->bytes.size(), 2u);
  ASSERT_NE(t.Find({CollectiveImpl::kNccl, CollectiveOp::kAllGather, 4, 1}), nullptr);
  EXPECT_EQ(t.Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 2, 1}), nullptr);
}

TEST_F(CollectiveTablesTest, VllmTableKeepsGraphRowsOnly) {
  const CollectiveTables t = Load({Write("custom_allreduce_perf.csv", kAicVllm)});
  const CollectiveCurve* c = t.Find({CollectiveImpl::kVllm, CollectiveOp::kAllReduce, 2, 1});
  ASSERT_NE(c, nullptr);
  bool outside = false;
  EXPECT_EQ(c->At(Bytes(2048), &outside), Us(4));  // the graph row, not the eager 20 us
  EXPECT_EQ(c->At(Bytes(8192), &outside), Us(6));
  EXPECT_FALSE(outside);
  EXPECT_EQ(t.Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 2, 1}), nullptr);
}

TEST_F(CollectiveTablesTest, ApexOperationFromTheFileNameSizeInKib) {
  const CollectiveTables t = Load({Write("sendrecv.csv", kApexSendRecv)});
  const CollectiveCurve* one_node = t.Find({CollectiveImpl::kNccl, CollectiveOp::kSendRecv, 2, 1});
  ASSERT_NE(one_node, nullptr);
  bool outside = false;
  EXPECT_EQ(one_node->At(KiB(4), &outside), Us(8));     // the half row, not float's 99
  EXPECT_EQ(one_node->At(KiB(2), &outside), Us(7));     // half way
  const CollectiveCurve* two_nodes = t.Find({CollectiveImpl::kNccl, CollectiveOp::kSendRecv, 2, 2});
  ASSERT_NE(two_nodes, nullptr);
  EXPECT_EQ(two_nodes->At(KiB(4), &outside), Us(30));
  EXPECT_FALSE(outside);
}

TEST_F(CollectiveTablesTest, VidurMedianAveragedOverRepeatedSizesNodesFromDevicesPerNode) {
  const CollectiveTables t = Load({Write("all_reduce.csv", kVidur)});
  const CollectiveCurve* c = t.Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 2, 1});
  ASSERT_NE(c, nullptr);
  bool outside = false;
  EXPECT_EQ(c->At(Bytes(2048), &outside), Us(28));
  EXPECT_EQ(c->At(Bytes(10240), &outside), Us(32));  // (0.030 + 0.034) / 2 ms
  const CollectiveCurve* across = t.Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 2, 2});
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(across->At(Bytes(2048), &outside), Us(50));
}

TEST_F(CollectiveTablesTest, FolderReadsEveryTableBelowItAndSkipsOtherCsv) {
  Write("comm/nccl/nccl_perf.csv", kAicNccl);
  Write("comm/vllm/custom_allreduce_perf.csv", kAicVllm);
  Write("comm/notes.csv", "a,b\n1,2\n");
  const CollectiveTables t = Load({(dir_ / "comm").string()});
  EXPECT_EQ(t.files().size(), 2u);
  EXPECT_NE(t.Find(kNccl4), nullptr);
  EXPECT_NE(t.Find({CollectiveImpl::kVllm, CollectiveOp::kAllReduce, 2, 1}), nullptr);
}

TEST_F(CollectiveTablesTest, ErrorsAreLocatedOrNameTheFiles) {
  const std::string bad_header = Write("x.csv", "a,b\n1,2\n");
  auto t = CollectiveTables::Load({bad_header});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), 3);
  EXPECT_THAT(t.status().message(), HasSubstr("x.csv:1:1: header: not a collective table"));

  const std::string bad_number = Write("nccl_perf.csv",
                                       "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,"
                                       "message_size,latency\nTRTLLM,2.29.2,GPU,all_reduce,NCCL,half,4,1024,fast\n");
  t = CollectiveTables::Load({bad_number});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("nccl_perf.csv:2:47: latency: expected a number in [0, 3600000], got 'fast'"));

  const std::string a = Write("a/all_reduce.csv", "gpu,num_nodes,num_gpus_per_node,dtype,size(kb),time(us)\nG,1,4,half,0,9\n");
  const std::string b = Write("b/nccl_perf.csv", kAicNccl);
  t = CollectiveTables::Load({a, b});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("nccl all_reduce over 4 GPUs on 1 node(s) is also stated by " + a));

  const std::string misnamed = Write("times.csv", "gpu,num_nodes,num_gpus_per_node,dtype,size(kb),time(us)\nG,1,4,half,0,9\n");
  t = CollectiveTables::Load({misnamed});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("is named after its operation"));

  t = CollectiveTables::Load({(dir_ / "absent.csv").string()});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("absent.csv: no such collective table file or folder"));
}

// ---- vLLM's choice and the alpha-beta fallback ------------------------------------

// 100 GB/s, 1 us per hop.
constexpr LinkCost kLink{100e9, Us(1)};

TEST(VllmAllReduceChoice, CustomKernelOnlyWherevLLMUsesIt) {
  const Bytes small = KiB(64);
  EXPECT_TRUE(VllmUsesCustomAllReduce(2, small, /*nvlink=*/false, /*peer_to_peer=*/true));  // 2 PCIe GPUs
  EXPECT_FALSE(VllmUsesCustomAllReduce(4, small, false, true));   // > 2 GPUs need NVLink
  EXPECT_TRUE(VllmUsesCustomAllReduce(8, small, true, true));
  EXPECT_FALSE(VllmUsesCustomAllReduce(3, small, true, true));    // world sizes 2, 4, 6, 8 only
  EXPECT_FALSE(VllmUsesCustomAllReduce(2, small, true, false));   // no peer-to-peer access
  EXPECT_TRUE(VllmUsesCustomAllReduce(2, Bytes(kVllmCustomAllReduceMaxBytes - 1), true, true));
  EXPECT_FALSE(VllmUsesCustomAllReduce(2, Bytes(kVllmCustomAllReduceMaxBytes), true, true));
}

TEST(VllmAllReduceChoice, CustomKernelStagesByHand) {
  // 4 NVLink GPUs, 64 KiB: one stage, 1 us + 3 * 65536 B / 100 GB/s = 1 + 1.96608 us.
  EXPECT_EQ(CustomAllReduceTime(4, KiB(64), kLink, true), Ns(2966));
  // 4 GPUs, 8 MB (>= 512 KiB): two stages, 2 us + 2 * 3/4 * 80 us = 122 us.
  EXPECT_EQ(CustomAllReduceTime(4, Bytes(8'000'000), kLink, true), Us(122));
  // 8 GPUs, 300 KiB (>= 256 KiB): two stages, 2 us + 2 * 7/8 * 307200 B / 100 GB/s.
  EXPECT_EQ(CustomAllReduceTime(8, KiB(300), kLink, true), Ns(2000 + 5376));
  // 2 GPUs: always one stage, 1 us + 8 MB / 100 GB/s... 8,000,000 B < 8 MiB: 81 us.
  EXPECT_EQ(CustomAllReduceTime(2, Bytes(8'000'000), kLink, false), Us(81));
}

TEST(HostStaged, TwoPcieHopsInSeries) {
  const LinkCost staged = HostStaged(LinkCost{32e9, Us(1)});
  EXPECT_EQ(staged.bandwidth, 16e9);
  EXPECT_EQ(staged.latency, Us(2));
}

ParallelLinks Tp(int64_t tp, bool nvlink, bool p2p) {
  ParallelLinks l;
  l.tp = tp;
  l.tp_link = kLink;
  l.tp_nvlink = nvlink;
  l.peer_to_peer = p2p;
  return l;
}

TEST(ParallelComm, AlphaBetaFallbackFollowsVllmsChoice) {
  bool outside = false;
  CommSource source = CommSource::kNone;
  // 4 NVLink GPUs, 8 MB: vLLM's custom kernel, two stages = 122 us.
  EXPECT_EQ(ParallelComm(Tp(4, true, true), nullptr).TpAllReduce(Bytes(8'000'000), &outside, &source), Us(122));
  EXPECT_EQ(source, CommSource::kAlphaBeta);
  // 4 PCIe GPUs: NCCL's ring, 2 * 3 * 1 us + 2 * 3/4 * 80 us = 126 us.
  EXPECT_EQ(ParallelComm(Tp(4, false, true), nullptr).TpAllReduce(Bytes(8'000'000), &outside), Us(126));
  // 16 MB is over the custom kernel's limit even on NVLink: the ring.
  EXPECT_EQ(ParallelComm(Tp(4, true, true), nullptr).TpAllReduce(Bytes(16'000'000), &outside), Us(6 + 240));
  // One rank: nothing.
  EXPECT_EQ(ParallelComm(Tp(1, true, true), nullptr).TpAllReduce(Bytes(8'000'000), &outside, &source), Duration());
  EXPECT_EQ(source, CommSource::kNone);
  EXPECT_FALSE(outside);
}

TEST(ParallelComm, WithoutPeerToPeerNcclStagesThroughHostMemory) {
  // 2 PCIe GPUs without P2P (RTX 4090): no custom kernel; NCCL's ring over (2 us, 50 GB/s):
  // 2 * 1 * 2 us + 2 * 1/2 * 1 MB / 50 GB/s = 4 + 20 = 24 us.
  bool outside = false;
  EXPECT_EQ(ParallelComm(Tp(2, false, false), nullptr).TpAllReduce(Bytes(1'000'000), &outside), Us(24));
  // The same pair with P2P takes vLLM's custom kernel: 1 us + 1 MB / 100 GB/s = 11 us.
  EXPECT_EQ(ParallelComm(Tp(2, false, true), nullptr).TpAllReduce(Bytes(1'000'000), &outside), Us(11));
}

TEST(ParallelComm, PipelineSendRecvByHandAndStaged) {
  ParallelLinks l;
  l.pp = 2;
  l.pp_link = LinkCost{50e9, Us(2)};
  bool outside = false;
  CommSource source = CommSource::kNone;
  // 2 us + 1 MB / 50 GB/s = 22 us.
  EXPECT_EQ(ParallelComm(l, nullptr).PpSendRecv(Bytes(1'000'000), &outside, &source), Us(22));
  EXPECT_EQ(source, CommSource::kAlphaBeta);
  // Without P2P inside a node: 4 us + 1 MB / 25 GB/s = 44 us.
  l.peer_to_peer = false;
  EXPECT_EQ(ParallelComm(l, nullptr).PpSendRecv(Bytes(1'000'000), &outside), Us(44));
  // Between nodes the NIC carries it: not staged.
  l.pp_spans_nodes = true;
  EXPECT_EQ(ParallelComm(l, nullptr).PpSendRecv(Bytes(1'000'000), &outside), Us(22));
}

TEST_F(CollectiveTablesTest, TablesPriceTheImplementationVllmWouldUse) {
  auto tables = std::make_shared<const CollectiveTables>(
      Load({Write("nccl_perf.csv", kAicNccl), Write("custom_allreduce_perf.csv", kAicVllm),
            Write("sendrecv.csv", kApexSendRecv)}));
  bool outside = false;
  CommSource source = CommSource::kNone;
  // 2 GPUs, 2 KiB: the custom kernel, from the vLLM table.
  EXPECT_EQ(ParallelComm(Tp(2, true, true), tables).TpAllReduce(Bytes(2048), &outside, &source), Us(4));
  EXPECT_EQ(source, CommSource::kTable);
  // 4 PCIe GPUs, 2 KiB: NCCL, from the NCCL table.
  EXPECT_EQ(ParallelComm(Tp(4, false, true), tables).TpAllReduce(Bytes(2048), &outside, &source), Us(10));
  EXPECT_EQ(source, CommSource::kTable);
  // 2 GPUs, 16 MB: NCCL, which no table states for 2 GPUs: alpha-beta ring, 2 us + 160 us.
  EXPECT_EQ(ParallelComm(Tp(2, true, true), tables).TpAllReduce(Bytes(16'000'000), &outside, &source), Us(162));
  EXPECT_EQ(source, CommSource::kAlphaBeta);
  // PP send/recv of 2 KiB from the APEX+ table: 7 us.
  ParallelLinks pp;
  pp.pp = 2;
  pp.pp_link = kLink;
  EXPECT_EQ(ParallelComm(pp, tables).PpSendRecv(KiB(2), &outside, &source), Us(7));
  EXPECT_EQ(source, CommSource::kTable);
  EXPECT_FALSE(outside);
}

// ---- the shared tables: one row of each exactly -----------------------------------

TEST(CollectiveTablesShared, OneRowOfEachSource) {
  FP_REQUIRE_SHARED_DATA();
  const std::string aic = testing::SharedPath("profiles/aiconfigurator/h200_sxm/comm");
  auto t = CollectiveTables::Load({aic});
  ASSERT_TRUE(t.ok()) << t.status().message();
  bool outside = false;
  // nccl_perf: all_reduce half, 8 GPUs, 256 elements = 512 B: 0.016010000000000003 ms.
  EXPECT_EQ(t->Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 8, 1})->At(Bytes(512), &outside), Ns(16010));
  // custom_allreduce_perf: vllm_graph, 4 GPUs, 128 elements = 256 B: 0.004428159892559051 ms.
  EXPECT_EQ(t->Find({CollectiveImpl::kVllm, CollectiveOp::kAllReduce, 4, 1})->At(Bytes(256), &outside), Ns(4428));

  auto apex = CollectiveTables::Load({testing::SharedPath("profiles/apex-plus/comm/H200-SXM-141GB")});
  ASSERT_TRUE(apex.ok()) << apex.status().message();
  // all_reduce.csv: H200, 1 node x 8, half, 0 KB: 15.0 us.
  EXPECT_EQ(apex->Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 8, 1})->At(Bytes(0), &outside), Us(15));

  auto vidur = CollectiveTables::Load({testing::SharedPath("profiles/vidur/network/h100_pairwise_nvlink/all_reduce.csv"),
                                       testing::SharedPath("profiles/vidur/network/h100_dgx/send_recv.csv")});
  ASSERT_TRUE(vidur.ok()) << vidur.status().message();
  // all_reduce: 4 workers at 16 MiB twice, medians 0.556 and 0.555 ms: 555.5 us.
  EXPECT_EQ(vidur->Find({CollectiveImpl::kNccl, CollectiveOp::kAllReduce, 4, 1})->At(MiB(16), &outside), Ns(555500));
  // send_recv: 2 workers, 1 per node (2 nodes), 2048 B: median 0.017 ms; on one node 0.005 ms.
  EXPECT_EQ(vidur->Find({CollectiveImpl::kNccl, CollectiveOp::kSendRecv, 2, 2})->At(Bytes(2048), &outside), Us(17));
  EXPECT_EQ(vidur->Find({CollectiveImpl::kNccl, CollectiveOp::kSendRecv, 2, 1})->At(Bytes(2048), &outside), Us(5));
  EXPECT_FALSE(outside);
}

}  // namespace
}  // namespace fleetplan
