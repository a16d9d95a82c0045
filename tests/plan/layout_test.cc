// Layout search: enumeration, rejection reasons, timing terms, ranking (plan/layout.h).
#include "fleetplan/plan/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fleetplan/catalog/catalog.h"
#include "fleetplan/core/json.h"
#include "fleetplan/perf/collectives.h"
#include "fleetplan/plan/cluster_file.h"
#include "fleetplan/plan/layout_report.h"

namespace fleetplan {
namespace {

const Catalog& Cat() {
  return Catalog::Builtin();
}

Cluster Short(const std::string& form, std::vector<std::string> removals = {}) {
  Expected<Cluster> c = ParseClusterShortForm(form, Cat());
  EXPECT_TRUE(c.ok()) << c.status().message();
  Expected<Cluster> out = ApplyRemovals(std::move(c).value(), removals, "--without");
  EXPECT_TRUE(out.ok()) << out.status().message();
  return std::move(out).value();
}

LayoutRequest Request(const std::string& model) {
  LayoutRequest r;
  r.model = *Cat().Model(model);
  return r;
}

LayoutResult Search(const LayoutRequest& r, const Cluster& c) {
  Expected<LayoutResult> res = SearchLayouts(r, c);
  EXPECT_TRUE(res.ok()) << res.status().message();
  return std::move(res).value();
}

const FeasibleLayout* Find(const LayoutResult& r, int64_t tp, int64_t pp, int64_t ep = 1) {
  for (const FeasibleLayout& f : r.feasible) {
    if (f.layout.tp == tp && f.layout.pp == pp && f.layout.ep == ep) return &f;
  }
  return nullptr;
}

std::string Rejection(const LayoutResult& r, int64_t tp, int64_t pp, int64_t ep = 1) {
  for (const RejectedLayout& x : r.rejected) {
    if (x.layout.tp == tp && x.layout.pp == pp && x.layout.ep == ep) return x.reason;
  }
  return "(not rejected)";
}

const FeasibleLayout& Winner(const LayoutResult& r, bool decode) {
  return r.feasible[(decode ? r.decode : r.prefill).order.front()];
}

void ExpectTermsSum(const PhaseTiming& t) {
  EXPECT_EQ(t.step, t.compute + t.tp_all_reduce + t.ep_all_to_all + t.pp_handoff + t.pp_bubble);
}

// Atlas (70B dense) on one 8-GPU NVLink island: TP8 against PP2 × TP4.
TEST(Layout, Tp8AgainstPp2Tp4ShowsPrefillAndDecodeWithTheirDecidingTerms) {
  const LayoutResult r = Search(Request("atlas-70b"), Short("1x8xh100-sxm-80g"));
  const FeasibleLayout* tp8 = Find(r, 8, 1);
  const FeasibleLayout* pp2 = Find(r, 4, 2);
  ASSERT_NE(tp8, nullptr);
  ASSERT_NE(pp2, nullptr);
  for (const FeasibleLayout* f : {tp8, pp2}) {
    EXPECT_EQ(f->dp, 1);
    ExpectTermsSum(f->prefill);
    ExpectTermsSum(f->decode);
    EXPECT_LE(f->bytes_per_rank, f->budget_per_rank);
  }
  // TP8 all-reduces over 8 ranks (14 hops per all-reduce), TP4 over 4 (6 hops).
  EXPECT_GT(tp8->decode.tp_all_reduce, pp2->decode.tp_all_reduce);
  EXPECT_EQ(tp8->decode.pp_bubble, Duration());
  EXPECT_EQ(tp8->decode.pp_handoff, Duration());
  // PP2 with one microbatch: every stage idles while the other works — the bubble equals
  // the work of the step, so decode is slower even though TP4 all-reduces are cheaper.
  EXPECT_NEAR(static_cast<double>(pp2->decode.pp_bubble.ns()),
              static_cast<double>((pp2->decode.compute + pp2->decode.tp_all_reduce).ns()), 2);
  EXPECT_GT(pp2->decode.pp_handoff, Duration());
  // The stage boundary hands over the hidden states and the residual: 2 × 8192 × 2 B per
  // token for atlas-70b, times the microbatch's tokens; nothing without a pipeline.
  EXPECT_EQ(pp2->decode.pp_boundary_per_token.count(), 2 * 8192 * 2);
  EXPECT_EQ(pp2->decode.pp_boundary_per_microbatch.count(), 2 * 8192 * 2 * pp2->decode.tokens_per_microbatch);
  EXPECT_EQ(pp2->prefill.pp_boundary_per_microbatch.count(), 2 * 8192 * 2 * pp2->prefill.tokens_per_microbatch);
  EXPECT_EQ(tp8->decode.pp_boundary_per_token.count(), 0);
  const Json pp2_json = LayoutReportJson(r, Short("1x8xh100-sxm-80g"));
  bool reported = false;
  for (const Json& f : pp2_json["feasible"]) {
    if (f["tp"] == 4 && f["pp"] == 2) {
      EXPECT_EQ(f["decode"]["pp_boundary_bytes_per_token"], 2 * 8192 * 2);
      EXPECT_EQ(f["prefill"]["pp_boundary_bytes_per_microbatch"], pp2->prefill.pp_boundary_per_microbatch.count());
      reported = true;
    }
  }
  EXPECT_TRUE(reported);
  EXPECT_LT(tp8->decode.step, pp2->decode.step);
  EXPECT_LT(tp8->decode_rank, pp2->decode_rank);
  EXPECT_LT(tp8->prefill.step, pp2->prefill.step);
  // The text shows both rankings, the terms, and the verdict with its threshold.
  const std::string text = LayoutReportText(r, Short("1x8xh100-sxm-80g"));
  EXPECT_NE(text.find("Decode ranking"), std::string::npos);
  EXPECT_NE(text.find("Prefill ranking"), std::string::npos);
  EXPECT_NE(text.find("tp a-r"), std::string::npos);
  EXPECT_NE(text.find("bubble"), std::string::npos);
  EXPECT_NE(text.find("tp 4 × pp 2"), std::string::npos);
}

TEST(Layout, MicrobatchesShrinkTheBubbleOfThePipeline) {
  LayoutRequest q = Request("atlas-70b");
  q.tp = 4;
  q.pp = 2;
  const LayoutResult one = Search(q, Short("1x8xh100-sxm-80g"));
  q.microbatches = 4;
  const LayoutResult four = Search(q, Short("1x8xh100-sxm-80g"));
  ASSERT_EQ(one.feasible.size(), 1u);
  ASSERT_EQ(four.feasible.size(), 1u);
  const PhaseTiming& a = one.feasible[0].prefill;
  const PhaseTiming& b = four.feasible[0].prefill;
  EXPECT_EQ(b.microbatches, 4);
  EXPECT_EQ(b.tokens_per_microbatch, 2048);
  ExpectTermsSum(b);
  // Chunking the prompt adds no attention work, and prefill is compute-bound: the same
  // compute, but the bubble falls from half the step to about a fifth, (pp - 1)/(m + pp - 1)
  // with the longest (last) chunk filling the pipeline.
  EXPECT_NEAR(b.compute.seconds(), a.compute.seconds(), 0.01 * a.compute.seconds());
  EXPECT_NEAR(a.pp_bubble.seconds() / (a.step - a.pp_handoff).seconds(), 0.5, 1e-6);
  const double share = b.pp_bubble.seconds() / (b.step - b.pp_handoff).seconds();
  EXPECT_GT(share, 0.2);
  EXPECT_LT(share, 0.3);
  EXPECT_LT(b.step, a.step);
  // Decode is memory-bound: each microbatch reads the weights again, so four microbatches
  // of 16 sequences cost more than the bubble they save.
  const PhaseTiming& d1 = one.feasible[0].decode;
  const PhaseTiming& d4 = four.feasible[0].decode;
  EXPECT_NEAR(d4.pp_bubble.seconds() / (d4.step - d4.pp_handoff).seconds(), 0.2, 1e-6);
  EXPECT_GT(d4.step, d1.step);
  // pp 1 layouts ignore microbatches, and the output says so.
  EXPECT_EQ(four.derived.back(), "microbatches 4 apply to pp > 1 only; pp 1 layouts run 1");
}

TEST(Layout, WithMicrobatchesPrefillIsTooCloseToCallAndTheVerdictSaysSo) {
  LayoutRequest q = Request("atlas-70b");
  q.microbatches = 4;
  const Cluster c = Short("1x8xh100-sxm-80g");
  const LayoutResult r = Search(q, c);
  EXPECT_EQ(Winner(r, /*decode=*/false).layout.tp, 8);
  ASSERT_FALSE(r.prefill.close.empty());
  EXPECT_EQ(r.feasible[r.prefill.close.front()].layout.tp, 4);
  EXPECT_EQ(r.feasible[r.prefill.close.front()].layout.pp, 2);
  EXPECT_TRUE(r.decode.close.empty());
  const std::string text = LayoutReportText(r, c);
  EXPECT_NE(text.find("  prefill: tp 8 × pp 1 × dp 1 gives 29031 tokens/s on the cluster; too close to call without "
                      "a measurement (within 5%): tp 4 × pp 2 (95.1%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  decode: tp 8 × pp 1 × dp 1 gives 3880 tokens/s on the cluster; the runner-up tp 4 × pp 2 "
                      "reaches 37.3% of it: a clear call (threshold 5%)"),
            std::string::npos)
      << text;
}

TEST(Layout, TheChosenAllReduceAlgorithmPricesTheTpCollective) {
  LayoutRequest q = Request("atlas-70b");
  q.tp = 8;
  q.pp = 1;
  const Cluster c = Short("1x8xh100-sxm-80g");
  const LinkCost nvlink = LinkCost::Of(*Catalog::Builtin().Link("nvlink4"));
  const Bytes message = BytesFor(DType::kBf16, 64 * 8192);  // 64 decode tokens × hidden
  const LayoutResult ring = Search(q, c);
  ASSERT_EQ(ring.feasible.size(), 1u);
  EXPECT_EQ(ring.feasible[0].decode.tp_message, message);
  EXPECT_EQ(ring.feasible[0].decode.tp_all_reduce, AllReduceRingTime(8, message, nvlink) * (2 * 80));
  q.all_reduce = AllReduceAlgorithm::kTree;
  const LayoutResult tree = Search(q, c);
  ASSERT_EQ(tree.feasible.size(), 1u);
  EXPECT_EQ(tree.feasible[0].decode.tp_all_reduce, AllReduceTreeTime(8, message, nvlink) * (2 * 80));
  // Small decode messages are latency-bound: 6 tree hops beat 14 ring hops.
  EXPECT_LT(tree.feasible[0].decode.tp_all_reduce, ring.feasible[0].decode.tp_all_reduce);
}

TEST(Layout, EachGpuTypeOfAMixedClusterIsSearchedOnItsOwn) {
  const char* text =
      "racks:\n"
      "  - name: r0\n"
      "    nodes:\n"
      "      - {name: h0, gpu: h100-sxm-80g, gpus: 8}\n"
      "      - {name: l0, gpu: l40s, gpus: 4}\n";
  Expected<Cluster> c = ParseClusterText(text, "mixed.yaml", Cat());
  ASSERT_TRUE(c.ok()) << c.status().message();
  LayoutRequest q = Request("llama-3.1-8b");
  q.batch = 16;
  const LayoutResult r = Search(q, *c);
  bool h100 = false, l40s = false;
  for (const FeasibleLayout& f : r.feasible) {
    h100 = h100 || f.gpu == "h100-sxm-80g";
    l40s = l40s || f.gpu == "l40s";
    if (f.gpu == "l40s") {
      EXPECT_LE(f.layout.gpus(), 4);                          // a replica never mixes GPU types
      ASSERT_TRUE(!f.tp_link || f.tp_link->name == "pcie4");  // the L40S island is its PCIe switch
    }
  }
  EXPECT_TRUE(h100);
  EXPECT_TRUE(l40s);
  EXPECT_NE(LayoutReportText(r, *c).find("@l40s"), std::string::npos);
}

TEST(Layout, TpGroupsNeverSilentlyCrossADisallowedSlowLink) {
  const Cluster two = Short("2x8xh100-sxm-80g");
  const LayoutResult r = Search(Request("atlas-70b"), two);
  EXPECT_EQ(Rejection(r, 16, 1),
            "no complete replica can be placed: tp 16 needs 16 GPUs joined by links at least as fast as nvlink4 (450 "
            "GB/s); the largest such island has 8; pass --allow-cross-node-tp to let TP groups use slower links");
  for (const FeasibleLayout& f : r.feasible) {
    EXPECT_FALSE(f.tp_over_slow_link) << LayoutName(f.layout);
    if (f.tp_link) {
      EXPECT_EQ(f.tp_link->name, "nvlink4") << LayoutName(f.layout);
    }
  }
  LayoutRequest allowed = Request("atlas-70b");
  allowed.allow_cross_node_tp = true;
  const LayoutResult a = Search(allowed, two);
  const FeasibleLayout* tp16 = Find(a, 16, 1);
  ASSERT_NE(tp16, nullptr);
  EXPECT_TRUE(tp16->tp_over_slow_link);
  EXPECT_EQ(tp16->tp_link->name, "ib-ndr-400");
  // Over 50 GB/s instead of 450 GB/s the all-reduces dominate the step.
  EXPECT_GT(tp16->decode.tp_all_reduce, tp16->decode.compute);
}

TEST(Layout, DataParallelOnlyAfterAFullReplicaFits) {
  // Atlas in bf16 on 24 GB L4s: every replica needs at least 8 GPUs of weights.
  const LayoutResult r = Search(Request("atlas-70b"), Short("2x8xl4"));
  EXPECT_EQ(Rejection(r, 4, 1).rfind("one replica does not fit: weights ", 0), 0u) << Rejection(r, 4, 1);
  for (const FeasibleLayout& f : r.feasible) {
    EXPECT_GE(f.layout.gpus(), 8);
    EXPECT_GE(f.dp, 1);
    EXPECT_LE(f.dp, f.replicas);
    EXPECT_LE(f.bytes_per_rank, f.budget_per_rank);
  }
  // Asking for more replicas than the cluster holds is rejected with both numbers.
  LayoutRequest q = Request("atlas-70b");
  q.tp = 8;
  q.pp = 1;
  q.dp = 3;
  const LayoutResult three = Search(q, Short("2x8xh100-sxm-80g"));
  EXPECT_TRUE(three.feasible.empty());
  EXPECT_EQ(Rejection(three, 8, 1), "dp 3 needs 3 replicas of tp 8 × pp 1 GPUs; the cluster holds 2");
}

TEST(Layout, IllegalShapesAreRejectedWithTheirReason) {
  const LayoutResult r = Search(Request("atlas-70b"), Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(Rejection(r, 3, 1),
            "tp 3 does not divide the 64 attention heads of 'atlas-70b' (valid tp: 1, 2, 4, 8, 16, 32, 64)");
  LayoutRequest deep = Request("atlas-70b");
  deep.pp = 96;
  deep.tp = 1;
  const LayoutResult d = Search(deep, Short("16x8xh100-sxm-80g"));
  EXPECT_EQ(Rejection(d, 1, 96), "pp 96 exceeds the 80 layers of 'atlas-70b'");
  LayoutRequest dense_ep = Request("atlas-70b");
  dense_ep.tp = 2;
  dense_ep.ep = 2;
  EXPECT_EQ(Rejection(Search(dense_ep, Short("1x8xh100-sxm-80g")), 2, 1, 2),
            "ep 2 needs a mixture-of-experts model; 'atlas-70b' is dense (use ep 1)");
}

TEST(Layout, AnExpertPartitionDividesTheExpertCount) {
  // A mixture of 6 experts: tp 4 divides the heads, but 4 expert groups cannot split 6.
  LayoutRequest q = Request("mixtral-8x7b");
  q.model.name = "moe-6x7b";
  q.model.moe->experts = 6;
  q.runtime = "sglang";
  const LayoutResult r = Search(q, Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(Rejection(r, 4, 1, 4), "ep 4 does not divide the 6 routed experts of 'moe-6x7b'");
  EXPECT_EQ(Rejection(r, 8, 1, 4), "ep 4 does not divide the 6 routed experts of 'moe-6x7b'");
  ASSERT_FALSE(r.feasible.empty());
  bool saw_ep = false;
  for (const FeasibleLayout& f : r.feasible) {
    EXPECT_EQ(6 % f.layout.ep, 0) << LayoutName(f.layout);
    EXPECT_EQ(f.layout.tp % f.layout.ep, 0) << LayoutName(f.layout);
    saw_ep = saw_ep || f.layout.ep > 1;
  }
  EXPECT_TRUE(saw_ep);
  // vLLM offers ep = tp only.
  LayoutRequest v = Request("mixtral-8x7b");
  const LayoutResult vr = Search(v, Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(Rejection(vr, 8, 1, 2),
            "vllm runs expert parallelism over the whole tp group (--enable-expert-parallel: ep = tp = 8); ep 2 "
            "inside it is not offered");
  EXPECT_NE(Find(vr, 8, 1, 8), nullptr);
}

TEST(Layout, ExpertDispatchBytesAreCountedPerRoutedAssignment) {
  LayoutRequest q = Request("mixtral-8x7b");
  q.tp = 8;
  q.pp = 1;
  q.ep = 8;
  const LayoutResult r = Search(q, Short("1x8xh100-sxm-80g"));
  ASSERT_EQ(r.feasible.size(), 1u);
  const PhaseTiming& d = r.feasible[0].decode;
  // 64 tokens × top-2 = 128 assignments; 7 of 8 leave their group; 4096 × 2 B each; 32 layers.
  EXPECT_EQ(d.routed_assignments, 128);
  EXPECT_EQ(d.ep_dispatch_bytes, Bytes(128LL * 4096 * 2 * 7 / 8 * 32));
  EXPECT_EQ(d.ep_combine_bytes, d.ep_dispatch_bytes);
  EXPECT_GT(d.ep_all_to_all, Duration());
  // Twice the top-k: twice the assignments and the bytes, for the same tokens.
  LayoutRequest top4 = q;
  top4.model.moe->experts_per_token = 4;
  const LayoutResult r4 = Search(top4, Short("1x8xh100-sxm-80g"));
  ASSERT_EQ(r4.feasible.size(), 1u);
  EXPECT_EQ(r4.feasible[0].decode.ep_dispatch_bytes.count(), 2 * d.ep_dispatch_bytes.count());
}

TEST(Layout, LosingAGpuALinkOrACapabilityChangesTheAnswer) {
  const LayoutRequest q = Request("atlas-70b");
  const LayoutResult whole = Search(q, Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(Winner(whole, true).layout.tp, 8);
  // One GPU lost: TP8 no longer has 8 GPUs in its island.
  const LayoutResult gpu = Search(q, Short("1x8xh100-sxm-80g", {"gpu:n0/7"}));
  EXPECT_EQ(Rejection(gpu, 8, 1),
            "no complete replica can be placed: a replica needs tp 8 × pp 1 = 8 GPUs; the 1 node(s) of this type have "
            "7 healthy");
  EXPECT_NE(Winner(gpu, true).layout.gpus(), 8);
  // NVLink lost: every TP group would run over PCIe; only pipeline layouts remain.
  const LayoutResult nvlink = Search(q, Short("1x8xh100-sxm-80g", {"nvlink:n0"}));
  ASSERT_FALSE(nvlink.feasible.empty());
  for (const FeasibleLayout& f : nvlink.feasible) EXPECT_EQ(f.layout.tp, 1) << LayoutName(f.layout);
  EXPECT_EQ(Winner(nvlink, true).pp_link->name, "pcie5");
  // fp8 lost: fp8 weights have no native kernel anywhere: a specific no-fit reason.
  LayoutRequest fp8 = q;
  fp8.weight_dtype = DType::kFp8;
  const LayoutResult cap = Search(fp8, Short("1x8xh100-sxm-80g", {"dtype:fp8"}));
  EXPECT_TRUE(cap.feasible.empty());
  EXPECT_EQ(Rejection(cap, 8, 1),
            "h100-sxm-80g has no native fp8 for the weights (its formats: bf16, fp16, fp32, int8, int4)");
}

TEST(Layout, CloseCallsAreListedWithTheThreshold) {
  // One layout: nothing to be close to.
  LayoutRequest q = Request("llama-3.1-8b");
  q.batch = 16;
  q.tp = 1;
  q.pp = 1;
  const LayoutResult r = Search(q, Short("1x8xh100-sxm-80g"));
  ASSERT_EQ(r.feasible.size(), 1u);
  EXPECT_TRUE(r.decode.close.empty());
  LayoutRequest all = Request("llama-3.1-8b");
  all.batch = 16;
  all.pp = 1;
  all.close_call_share = 0.5;  // exactly the runners-up within half of the winner are listed
  const LayoutResult wide = Search(all, Short("1x8xh100-sxm-80g"));
  const double best = wide.feasible[wide.decode.order.front()].decode_score;
  for (const size_t i : wide.decode.close) EXPECT_GE(wide.feasible[i].decode_score, 0.5 * best);
  for (size_t pos = 1; pos < wide.decode.order.size(); ++pos) {
    const size_t i = wide.decode.order[pos];
    const bool listed = std::find(wide.decode.close.begin(), wide.decode.close.end(), i) != wide.decode.close.end();
    EXPECT_EQ(listed, wide.feasible[i].decode_score >= 0.5 * best);
  }
  const Json j = LayoutReportJson(wide, Short("1x8xh100-sxm-80g"));
  EXPECT_EQ(j["ranking"]["decode"]["threshold"], 0.5);
  EXPECT_EQ(j["ranking"]["decode"]["too_close_to_call"].size(), wide.decode.close.size());
}

TEST(Layout, RequestErrorsNameTheFlag) {
  LayoutRequest q = Request("atlas-70b");
  q.batch = 0;
  EXPECT_EQ(SearchLayouts(q, Short("1x8xh100-sxm-80g")).status().message(),
            "--batch: expected an integer between 1 and 16777216, got 0");
  q = Request("atlas-70b");
  q.microbatches = 100;
  q.batch = 8;
  EXPECT_EQ(SearchLayouts(q, Short("1x8xh100-sxm-80g")).status().message(),
            "--microbatches: expected an integer between 1 and 8, got 100");
  q = Request("atlas-70b");
  q.runtime = "vlm";
  EXPECT_EQ(SearchLayouts(q, Short("1x8xh100-sxm-80g")).status().message(),
            "--runtime: unknown runtime 'vlm'; did you mean 'vllm'? (valid: sglang, trtllm, vllm)");
}

TEST(Layout, SameInputsGiveByteIdenticalJson) {
  const Cluster c = Short("2x8xh100-sxm-80g");
  const LayoutRequest q = Request("mixtral-8x7b");
  const Expected<std::string> a = CanonicalJson(LayoutReportJson(Search(q, c), c));
  const Expected<std::string> b = CanonicalJson(LayoutReportJson(Search(q, c), c));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  const Json j = Json::parse(*a);
  for (const char* key : {"tp", "pp", "ep", "dp", "replicas", "bytes_per_rank", "prefill_ms", "decode_ms", "comm_ms",
                          "tokens_per_s_per_gpu"}) {
    EXPECT_TRUE(j["feasible"][0].contains(key)) << key;
  }
  for (const char* key : {"tp", "pp", "ep", "reason"}) EXPECT_TRUE(j["rejected"][0].contains(key)) << key;
}

}  // namespace
}  // namespace fleetplan
