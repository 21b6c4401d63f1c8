// tests/planner/cost_model_test.cpp: each cost term against hand-computed values: the data-parallel
// step (compute + exposed all-reduce + optimizer), ZeRO-3's per-block gathers, blocking reductions
// and bytes across sites, communication's CPU on shared cores (the floor, tp all-reduces, the
// hierarchical site steps, a flat reduction in a site), tp pairs as the profile timed them (busy
// and alone), a two-stage pipeline over a slow link with the tied embedding and the gradient norm,
// memory against caps, hierarchical and bf16 bytes across sites, sequence parallelism's gathers,
// recomputation's rerun all-reduces with tp.
#include <gtest/gtest.h>

#include "parallel/plan.h"
#include "planner/cluster.h"
#include "planner/comm_cost.h"
#include "planner/devices.h"
#include "planner/stage_split.h"
#include "planner_test_util.h"
#include "testbed/spec.h"
#include "util/error.h"

namespace slm::planner {
namespace {

using test::make_cluster;
using test::make_model;
using test::make_profile;
using test::share_one_pool;

TEST(CostModel, DataParallelStepIsComputePlusExposedReductionPlusOptimizer) {
  const Cluster c = make_cluster({2}, {1e-3, 1e8}, {});
  const ComputeProfile prof = make_profile(2, 0.1);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);  // 1 sequence per replica
  const Prediction p = predict(k, in);
  const double fwd = 2 * 0.1 + 0.2, bwd = 2 * 0.2 + 0.4;  // 2 blocks + head
  const double C = 64, V = 128, params = 2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C;
  const double reduce = 2 * 1e-3 + 4 * params / std::min(1e8, kWindowBytes / 1e-3);  // P = 2: one bucket
  EXPECT_NEAR(p.pipeline_s, fwd + bwd, 1e-12);
  EXPECT_NEAR(p.dp_comm_s, reduce, 1e-9);  // ready at the end of backward: nothing to hide it
  EXPECT_NEAR(p.optimizer_s, params * 1e-9, 1e-12);
  EXPECT_NEAR(p.step_s, fwd + bwd + reduce + params * 1e-9, 1e-9);
  EXPECT_NEAR(p.tokens_per_s, 2 * 16 / p.step_s, 1e-9);
  EXPECT_EQ(p.cross_site_bytes, 0);
  EXPECT_NEAR(p.price_per_hour, 2.0, 1e-12);
}

TEST(CostModel, ZeroThreeGathersHiddenReductionsBlocking) {
  // dp 2 with ZeRO-3: each block's gather hides behind compute (prefetched); the backward
  // recomputes the block and then waits for its gradient's reduction.
  const Link l{1e-3, 1e8};
  const Cluster c = make_cluster({2}, l, {});
  const ComputeProfile prof = make_profile(2, 0.1);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2, .zero = 3}, 2, 2, 2, 1);
  const double block = (12 * 64 * 64 + 13 * 64) * 4.0;
  const double reduce = ring_all_reduce_s(2, l, block);
  ASSERT_LT(ring_all_gather_s(2, l, block), 0.1);
  // forward: head 0.2 + 2 blocks of 0.1; backward: head 0.4 + 2 x (0.2 + 0.1 recomputed + reduce)
  EXPECT_NEAR(predict(k, in).pipeline_s, 0.4 + 0.4 + 2 * (0.3 + reduce), 1e-9);
  // Across two sites the ring's two edges cross: per block, a gather forward and one backward
  // ((P-1)/P of it each) and the all-reduce (2(P-1)/P), counted once for the group, not per replica;
  // the embeddings and final LayerNorm (V = 128, T = 16) once per step: reduced and gathered.
  const Cluster two = make_cluster({1, 1}, l, l);
  in.cluster = &two;
  const double kept = (128 * 64 + 16 * 64 + 2 * 64) * 4.0;
  EXPECT_NEAR(predict(k, in).cross_site_bytes, 2 * 2 * block * (0.5 + 0.5 + 1) + 2 * kept * (1 + 0.5), 1e-6);
  // With the probe's hop latencies for that link, each gather and reduction pays them per hop.
  Cluster timed = two;
  timed.hops = {l.alpha_s, {0.002, 0.004}, {0.003, 0.003}};
  in.cluster = &timed;
  const double g2 = ring_all_gather_s(2, l, block, 1, 1, 0.003);
  const double r2 = ring_all_reduce_s(2, l, block, 1, 1, hop_latency_s(l, timed.hops.all_reduce, l.alpha_s, block));
  ASSERT_LT(g2, 0.1);
  EXPECT_NEAR(predict(k, in).pipeline_s, 0.4 + 0.4 + 2 * (0.3 + r2), 1e-9);
  EXPECT_GT(r2, reduce);
  // Gathers slower than the compute: forward waits for each; in backward a block's gather runs
  // beside the block after it (its recomputation, backward and reduction) and waits the rest.
  timed.hops.all_gather = {0.5, 0.5};
  const double g3 = ring_all_gather_s(2, l, block, 1, 1, 0.5);
  ASSERT_GT(g3, 0.3 + r2);
  EXPECT_NEAR(predict(k, in).pipeline_s, 0.2 + 2 * g3 + 0.4 + 2 * g3, 1e-9);
  timed.hops.all_gather = {0.305, 0.305};  // longer than the block's compute, not with its reduction
  const double g4 = ring_all_gather_s(2, l, block, 1, 1, 0.305);
  ASSERT_GT(g4, 0.3);
  ASSERT_LT(g4, 0.3 + r2);
  EXPECT_NEAR(predict(k, in).pipeline_s, 0.2 + 2 * g4 + 0.4 + 2 * (0.3 + r2), 1e-9);
}

TEST(CostModel, ZeroThreeWithTpGathersEachRanksSliceAroundTpBlocks) {
  // dp 2 x tp 2 with ZeRO-3 over two sites (each replica's tp pair in one site): a rank gathers
  // and reduces its tp slice of each block (12C²/2 + 7C/2 + 6C parameters) over its dp group,
  // whose ring crosses the sites beside the other tp rank's (the link shared by 2); a block's
  // forward is its half plus tp's 2 all-reduces, its backward the rerun forward and the backward.
  const Link l{1e-3, 1e8}, in_site{1e-5, 1e10};
  const Cluster c = make_cluster({2, 2}, in_site, l);
  const ComputeProfile prof = make_profile(4, 0.1);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = std::vector<int>{0, 1, 2, 3};
  k.plan = parallel::plan_from_flags({.dp = 2, .tp = 2, .zero = 3}, 2, 4, 2, 1);
  const double C = 64, block = (12 * C * C / 2 + 7 * C / 2 + 6 * C) * 4, act = 1 * 16 * C * 4;
  const double ar = ring_all_reduce_s(2, in_site, act);
  const double gather = ring_all_gather_s(2, l, block, 1, 2), reduce = ring_all_reduce_s(2, l, block, 1, 2);
  const double loss_ar = ring_all_reduce_s(2, in_site, 16 * 4);
  ASSERT_LT(gather, 0.05 + 2 * ar);
  const double bf = 0.05 + 2 * ar, bb = 0.1 + 2 * ar;  // one block's half and its all-reduces
  const double fwd = 0.1 + ar + 3 * loss_ar + 2 * bf, bwd = 0.2 + 2 * (bf + bb + reduce);  // + head, embedding
  EXPECT_NEAR(predict(k, in).pipeline_s, fwd + bwd, 1e-9);
  // Across the sites: per block each rank's gathers forward and backward and its reduction, for
  // both tp ranks' rings, counted once per ring; the same once per step for each rank's slice of
  // the embeddings and final LayerNorm.
  const double kept = (128 * C / 2 + 16 * C + 2 * C) * 4;
  EXPECT_NEAR(predict(k, in).cross_site_bytes, 2 * 2 * 2 * block * (0.5 + 0.5 + 1) + 2 * 2 * kept * (1 + 0.5), 1e-6);
}

TEST(CostModel, GathersAcrossSitesAtTheProbesAllGatherRate) {
  // ZeRO-1's parameter all-gather over two one-rank sites: at the rate the probe's large all-gather
  // reached (half the link's here) where its ring crosses sites, as the probe's ring did.
  const Link l{1e-3, 1e8};
  const ComputeProfile prof = make_profile(2, 0.1);
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2, .zero = 1}, 2, 2, 2, 1);
  const Cluster two = make_cluster({1, 1}, l, l);
  Cluster timed = two;
  timed.hops.link_alpha_s = l.alpha_s, timed.hops.all_gather_Bps = 5e7;
  CostInputs in{&two, &prof, make_model(2), 16, 25, 0, {}};
  const double at_link = predict(k, in).zero_gather_s;
  in.cluster = &timed;
  const double at_probe = predict(k, in).zero_gather_s;
  EXPECT_NEAR(at_probe - l.alpha_s, 2 * (at_link - l.alpha_s), 1e-9);  // ring_all_gather_s: α + B/2/β
  // Inside one site the probe's cross-site rate does not apply.
  Cluster one = make_cluster({2}, l, {});
  in.cluster = &one;
  const double inside = predict(k, in).zero_gather_s;
  one.hops = timed.hops;
  EXPECT_NEAR(predict(k, in).zero_gather_s, inside, 1e-12);
}

TEST(CostModel, SharedCoresAddCommunicationsCpuAsAFloor) {
  // Two ranks sharing one core (alone each runs 2x faster): their compute, optimizer and the CPU
  // of moving the gradients (1 ns per byte sent or received) must fit on that one core.
  const Cluster c = make_cluster({2}, {1e-3, 1e8}, {});
  ComputeProfile prof = make_profile(2, 0.1);
  share_one_pool(prof, 2);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);
  const Prediction before = predict(k, in);
  EXPECT_EQ(before.cpu_bound_s, 0);  // not measured: no floor
  for (RankProfile& r : prof.ranks) r.comm_cpu_s_per_byte = 1e-9;
  const double C = 64, V = 128, params = 2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C;
  const double compute = 0.4 + 0.8, optim = params * 1e-9, sent = 2.0 * (2 - 1) / 2 * 4 * params;
  const Prediction p = predict(k, in);
  // 2 ranks x (their half of the core for compute + optimizer, and 2 x sent bytes) on 1 core
  EXPECT_NEAR(p.cpu_bound_s, 2 * ((compute + optim) / 2 + 1e-9 * 2 * sent), 1e-9);
  EXPECT_NEAR(p.step_s, std::max(before.step_s, p.cpu_bound_s), 1e-12);
  // The pool's cores are one number: ranks that measured 1.5x and 2.5x alone count as 2x each.
  prof.ranks[0].solo_speedup = 1.5, prof.ranks[1].solo_speedup = 2.5;
  EXPECT_NEAR(predict(k, in).cpu_bound_s, p.cpu_bound_s, 1e-12);
  // Under a quota of half a core the pool has 0.5 cores: the measured compute (quota included)
  // still fits as before, and the bytes' CPU as without the quota (measured: bulk transfers of a
  // site of cpus = 0.5 as fast as beside it, Ctx::comm_cores).
  for (RankProfile& r : prof.ranks) r.alone_cores = 0.5;
  EXPECT_NEAR(predict(k, in).cpu_bound_s, 2 * ((compute + optim) / 2 + 1e-9 * 2 * sent), 1e-9);
}

TEST(CostModel, ZeroThreesRerunForwardIsCpuWorkOnSharedCores) {
  // ZeRO-3 reruns each block's forward in backward: on two ranks sharing one core that forward is
  // CPU work in the floor (as recomputation's), beside the backward, the head and the gathers' bytes.
  const Cluster c = make_cluster({2}, {1e-3, 1e8}, {});
  ComputeProfile prof = make_profile(2, 0.1);
  share_one_pool(prof, 2, 1e-9);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = std::vector<int>{0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2, .zero = 3}, 2, 2, 2, 1);
  const Prediction p = predict(k, in);
  const double block = (12 * 64 * 64 + 13 * 64) * 4.0, kept = (128 * 64 + 16 * 64 + 2 * 64) * 4.0;
  const double compute = 0.4 + (0.4 + 2 * (0.2 + 0.1)), sent = 2 * (2 * 0.5 + 2 * 0.5) * block + (0.5 + 1) * kept;
  EXPECT_NEAR(p.cpu_bound_s, 2 * ((compute + p.optimizer_s) / 2 + 1e-9 * 2 * sent), 1e-9);
  // The same plan with recomputation reruns each block once, not twice.
  k.recompute = true;
  EXPECT_NEAR(predict(k, in).cpu_bound_s, p.cpu_bound_s, 1e-12);
}

TEST(CostModel, MachinesExtraCpuGoesWithTheBytesSentAcross) {
  // Two one-rank sites whose ranks share one core (a testbed): each measured 1 ns of its own CPU
  // per byte it moved, and its machine spent 1 ns more per byte a rank moved beyond theirs (0.5 ns
  // each rank's share; the link emulator). That goes with the bytes sent across: both ranks send
  // across in the profile's ring, so 2 x 1 ns / 2 more per byte sent across, B = the gradient's
  // bytes each (a ring of 2: 2(P-1)/P x B).
  const Cluster c = make_cluster({1, 1}, {1e-4, 1e9}, {1e-3, 1e8});
  ComputeProfile prof = make_profile(2, 0.1);
  share_one_pool(prof, 2, 1e-9);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = std::vector<int>{0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);
  const double before = predict(k, in).cpu_bound_s;
  for (RankProfile& r : prof.ranks) r.machine_extra_cpu_s_per_byte = 0.5e-9;
  const double C = 64, V = 128, B = 4 * (2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C);
  EXPECT_NEAR(predict(k, in).cpu_bound_s - before, 2 * 1e-9 * B / 1.0, 1e-9);  // 2 ranks, 1 core
  // In one site nobody sent across: the extra goes with every byte moved, the same CPU in all.
  const Cluster one = make_cluster({2}, {1e-3, 1e8}, {});
  in.cluster = &one;
  for (RankProfile& r : prof.ranks) r.machine_extra_cpu_s_per_byte = 0;
  const double inside = predict(k, in).cpu_bound_s;
  for (RankProfile& r : prof.ranks) r.machine_extra_cpu_s_per_byte = 0.5e-9;
  EXPECT_NEAR(predict(k, in).cpu_bound_s - inside, 2 * 1e-9 * B / 1.0, 1e-9);
}

TEST(CostModel, BucketsRunOnTwoGlooLanes) {
  // Two buckets over a 50 ms link: each on its own connection window, sharing the rate; the
  // second is ready when the backward ends, so one bucket's time is exposed.
  const Link wan{0.05, 125e6};
  const Cluster c = make_cluster({1, 1}, {1e-4, 1e9}, wan);
  const ComputeProfile prof = make_profile(2, 1e-4);
  const double C = 64, V = 128, bytes = 4 * (2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C);
  CostInputs in{&c, &prof, make_model(2), 16, bytes / 2 / (1024 * 1024) * 1.0001, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);
  const double bucket = 2 * 0.05 + (bytes / 2) / std::min(125e6 / 2, kWindowBytes / 0.05);
  EXPECT_NEAR(predict(k, in).dp_comm_s, bucket, 1e-6);
}

TEST(CostModel, TwoStagePipelineOverASlowLink) {
  const Link wan{0.05, 1e7};
  const Cluster c = make_cluster({1, 1}, {1e-4, 1e9}, wan);
  const ComputeProfile prof = make_profile(2, 0.1);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.pp = 2, .micro_batches = 1, .schedule = "gpipe"}, 2, 2, 1, 1);
  const Prediction p = predict(k, in);
  const double act = 1 * 16 * 64 * 4, send = p2p_s(wan, act);
  // F0 -> send -> F1(+head) B1(+head) -> send -> B0
  const double expect = 0.1 + send + (0.1 + 0.2) + (0.2 + 0.4) + send + 0.2;
  EXPECT_NEAR(p.pipeline_s, expect, 1e-9);
  // The head's gradient follows B1's gradient (its α is in the schedule); the weights going back
  // at the next step's start hide behind its first forward (0.1 s) unless the receiver's notice
  // (α) and their own α + bytes take longer.
  const double wte = 128 * 64 * 4, move = p2p_s(wan, wte) - wan.alpha_s;
  ASSERT_LT(move, 0.1);
  EXPECT_NEAR(p.tied_s, move, 1e-9);
  // The gradient norm: each stage sends its number into a receive posted at the start; the last
  // stage's is done one gradient message (its α) and B0 before the first stage's: nothing waits.
  EXPECT_EQ(p.norm_s, 0);
  EXPECT_NEAR(p.step_s, expect + p.tied_s + p.norm_s + p.optimizer_s, 1e-9);
  EXPECT_NEAR(p.cross_site_bytes, 2 * act + 2 * wte, 1e-6);
  EXPECT_NEAR(p.bubble, 1 - ((0.1 + 0.2) / expect + (0.9) / expect) / 2, 1e-9);
  // A narrow link: the weights take longer than the first forward, and the rest is exposed.
  const Cluster narrow = make_cluster({1, 1}, {1e-4, 1e9}, {0.05, 1e5});
  in.cluster = &narrow;
  const double slow = p2p_s({0.05, 1e5}, wte) - 0.05;
  ASSERT_GT(slow, 0.1);
  EXPECT_NEAR(predict(k, in).tied_s, slow + (0.05 + slow - 0.1), 1e-9);
  // A far link: the rendezvous alone outlasts the first forward.
  const Cluster far = make_cluster({1, 1}, {1e-4, 1e9}, {0.2, 1e7});
  in.cluster = &far;
  const double far_move = p2p_s({0.2, 1e7}, wte) - 0.2;  // a TCP window per round trip bounds the rate
  EXPECT_NEAR(predict(k, in).tied_s, far_move + (0.2 + far_move - 0.1), 1e-9);
}

TEST(CostModel, GradientNormSumsOverZerosGroup) {
  // ZeRO shards the gradient: its norm is a sum of one number over the dp group; plain dp has
  // every gradient whole and sums nothing.
  const Link wan{0.02, 1e8};
  const Cluster c = make_cluster({1, 1}, {1e-4, 1e9}, wan);
  const ComputeProfile prof = make_profile(2, 0.01);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);
  EXPECT_EQ(predict(k, in).norm_s, 0);
  k.plan = parallel::plan_from_flags({.dp = 2, .zero = 2}, 2, 2, 2, 1);
  EXPECT_NEAR(predict(k, in).norm_s, 3 * 0.02, 1e-12);
}

TEST(CostModel, TensorParallelAllReducesAreCpuWorkOnSharedCores) {
  // tp 2 inside one pool of 2 ranks that share 1 core (alone 2x faster): each of a block's 2
  // forward all-reduces moves 2 x 1/2 of the activation out and as much in, at 10 ns per byte and
  // the rank's half of the core: more than the 1 GB/s link's time, so it is what a block pays.
  const Cluster c = make_cluster({2}, {1e-5, 1e9}, {});
  ComputeProfile prof = make_profile(2, 0.1);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.tp = 2}, 2, 2, 1, 1);
  const Prediction alone = predict(k, in);
  share_one_pool(prof, 2, 1e-8);
  const Prediction shared = predict(k, in);
  const double act = 1 * 16 * 64 * 4, link = ring_all_reduce_s(2, {1e-5, 1e9}, act);
  const double cpu = 1e-8 * 2 * act * 2;  // (sent + received) per byte, at half a core
  ASSERT_GT(cpu, link);
  // Per step: 2 blocks x 2 + 1 (embedding) all-reduces forward, 2 x 2 backward; both ranks busy
  // throughout (no bubble), so at the profile's speed.
  EXPECT_NEAR(shared.pipeline_s - alone.pipeline_s, (5 + 4) * (cpu - link), 1e-9);
  // Under a quota of half a core (a testbed site of cpus = 0.5: alone a rank has 0.5 cores, both
  // busy 0.25 each), the same bytes take twice as long.
  for (RankProfile& r : prof.ranks) r.alone_cores = 0.5;
  EXPECT_NEAR(predict(k, in).pipeline_s - alone.pipeline_s, (5 + 4) * (2 * cpu - link), 1e-9);
}

TEST(CostModel, SequenceParallelGathersTheLinearsInputsAgainInBackward) {
  // tp 2, 2 blocks. The backward gathers each block's two column-parallel inputs again: an
  // all-reduce's bytes per block. On Gloo (CPU ranks) the all-gathers before those linears come on
  // top of tp's all-reduces each way too (Gloo's reduce-scatter is an all-reduce).
  Cluster c = make_cluster({2}, {1e-5, 1e9}, {});
  ComputeProfile prof = make_profile(2, 0.1);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.tp = 2}, 2, 2, 1, 1);
  const double ar = ring_all_reduce_s(2, {1e-5, 1e9}, 1 * 16 * 64 * 4), blocks = 2;
  auto extra = [&] {  // what sequence parallelism adds to the step
    k.sequence_parallel = false;
    const double plain = predict(k, in).pipeline_s;
    k.sequence_parallel = true;
    return predict(k, in).pipeline_s - plain;
  };
  EXPECT_NEAR(extra(), blocks * (1 + 1 + 1) * ar, 1e-9);
  for (RankSpec& r : c.ranks) r.device = "cuda";  // NCCL: a reduce-scatter and an all-gather are an all-reduce
  EXPECT_NEAR(extra(), blocks * ar, 1e-9);
}

TEST(CostModel, TensorParallelRecomputationRerunsTheForwardsAllReduces) {
  // tp 2, 2 blocks, with and without recomputation, on a fast and on a slow link: what the slow
  // link adds to recomputation's cost is the rerun forward's 2 all-reduces per block.
  auto recompute_cost = [](double bandwidth) {
    const Cluster c = make_cluster({2}, {1e-5, bandwidth}, {});
    const ComputeProfile prof = make_profile(2, 0.1);
    CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
    Candidate k;
    k.ranks = {0, 1};
    k.plan = parallel::plan_from_flags({.tp = 2}, 2, 2, 1, 1);
    const double plain = predict(k, in).pipeline_s;
    k.recompute = true;
    return predict(k, in).pipeline_s - plain;
  };
  const double act = 1 * 16 * 64 * 4;
  const double slower = ring_all_reduce_s(2, {1e-5, 1e6}, act) - ring_all_reduce_s(2, {1e-5, 1e9}, act);
  EXPECT_NEAR(recompute_cost(1e6) - recompute_cost(1e9), 2 * 2 * slower, 1e-9);
}

TEST(CostModel, TensorParallelPairAsItsPoolTimedIt) {
  // Two ranks of one machine timed a block split over tp 2 (all-reduces included): 0.2 and 0.4 s
  // forward at b = 1, the pool's mean 0.3 (pairs of one site differed by a third with the same
  // work); 0.5 s backward. A block of tp 2 then costs that, not half a block plus 2 all-reduces
  // at the link's α-β; the embedding's one all-reduce half of a block's excess over its compute.
  const Link inside{1e-5, 1e9};
  const Cluster c = make_cluster({2}, inside, {});
  ComputeProfile prof = make_profile(2, 0.1);  // block 0.1 / 0.2 s, head 0.2 / 0.4 s at b = 1
  prof.ranks[0].tp2_fwd_s = {0.2, 1.6}, prof.ranks[1].tp2_fwd_s = {0.4, 3.2};
  for (RankProfile& r : prof.ranks) r.tp2_bwd_s = {0.5, 4.0};
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.tp = 2}, 2, 2, 1, 1);
  const double loss_ar = ring_all_reduce_s(2, inside, 1 * 16 * 4, 1, 1, inside.alpha_s);
  const double fwd = 2 * 0.3 + (0.3 - 0.1 / 2) / 2 + 0.2 / 2 + 3 * loss_ar, bwd = 2 * 0.5 + 0.4 / 2;
  EXPECT_NEAR(predict(k, in).pipeline_s, fwd + bwd, 1e-9);
  // A pair split over two machines is not what they timed: the formula again.
  prof.ranks[1].host = 1;
  EXPECT_LT(predict(k, in).pipeline_s, fwd + bwd - 1);
}

TEST(CostModel, PipelineStagesTakeThePairsMeanAsTimedAForwardApart) {
  // 4 ranks of one machine in two pairs timed a split block at 0.3 + 0.5 s in phase, and a forward
  // apart (as a pipeline's stages run) 0.4 + 0.6 (first pair) and 0.5 + 0.7 (second). pp 2 x tp 2
  // (one block per stage, gpipe, one micro-batch): both stages at the pairs' mean pace, 0.45 +
  // 0.65, each 0.3 s more than in phase, the first stage's embedding all-reduce (half a block
  // forward's excess over its compute) 0.075 more.
  const Cluster c = make_cluster({4}, {1e-5, 1e9}, {});
  ComputeProfile prof = make_profile(4, 0.1);
  for (RankProfile& r : prof.ranks) r.tp2_fwd_s = {0.3, 2.4}, r.tp2_bwd_s = {0.5, 4.0};
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate pipe;
  pipe.ranks = {0, 1, 2, 3};
  pipe.plan = parallel::plan_from_flags({.tp = 2, .pp = 2, .micro_batches = 1, .schedule = "gpipe"}, 2, 4, 1, 1);
  Candidate replicas = pipe;  // tp 2 x dp 2: the pairs run in phase
  replicas.plan = parallel::plan_from_flags({.tp = 2}, 2, 4, 2, 1);
  const double in_phase = predict(pipe, in).pipeline_s, replicas_in_phase = predict(replicas, in).pipeline_s;
  for (int r = 0; r < 4; ++r) {
    prof.ranks[static_cast<size_t>(r)].tp2_pipe_fwd_s = r < 2 ? std::vector<double>{0.4, 3.2} : std::vector<double>{0.5, 4.0};
    prof.ranks[static_cast<size_t>(r)].tp2_pipe_bwd_s = r < 2 ? std::vector<double>{0.6, 4.8} : std::vector<double>{0.7, 5.6};
  }
  EXPECT_NEAR(predict(pipe, in).pipeline_s - in_phase, 2 * 0.3 + 0.075, 1e-9);
  EXPECT_NEAR(predict(replicas, in).pipeline_s, replicas_in_phase, 1e-12);
  // Timed at 1, 2, 4 and 8 sequences, 0.2 s per sequence, and 0.3 s too slow at b = 1 on the
  // first pair: that pair's timings count along their least-squares line.
  for (RankProfile& r : prof.ranks) {
    r.micro_batch = {1, 2, 4, 8};
    for (auto* v : {&r.block_fwd_s, &r.block_bwd_s, &r.head_fwd_s, &r.head_bwd_s, &r.embed_s, &r.tp2_fwd_s, &r.tp2_bwd_s})
      *v = {(*v)[0], 2 * (*v)[0], 4 * (*v)[0], 8 * (*v)[0]};
    r.tp2_pipe_fwd_s = r.tp2_pipe_bwd_s = {0.2, 0.4, 0.8, 1.6};
  }
  const double exact = predict(pipe, in).pipeline_s;
  ComputeProfile fitted = prof;
  prof.ranks[0].tp2_pipe_fwd_s[0] = prof.ranks[1].tp2_pipe_fwd_s[0] = 0.5;
  fitted.ranks[0].tp2_pipe_fwd_s = fitted.ranks[1].tp2_pipe_fwd_s = line_fit({1, 2, 4, 8}, {0.5, 0.4, 0.8, 1.6});
  const double wiggled = predict(pipe, in).pipeline_s;
  in.profile = &fitted;
  EXPECT_NEAR(wiggled, predict(pipe, in).pipeline_s, 1e-12);
  EXPECT_GT(wiggled, exact);
}

TEST(CostModel, TensorParallelPairsSpeedUpAsMuchAsTheyDidAlone) {
  // pp 2 x tp 2 on one machine's 4 ranks (one alone 2x faster than all busy), gpipe with one
  // micro-batch: each stage's pair computes while the other waits. The pairs timed their block
  // at 0.3 + 0.5 s with all busy; alone as fast (all of it waits on their all-reduces) or twice
  // as fast (all of it CPU work, which the free cores speed up): half of every block's time, 4
  // blocks' worth, between the two.
  const Cluster c = make_cluster({4}, {1e-5, 1e9}, {});
  ComputeProfile prof = make_profile(4, 0.1);
  share_one_pool(prof, 4);
  for (RankProfile& r : prof.ranks) r.tp2_fwd_s = {0.3, 2.4}, r.tp2_bwd_s = {0.5, 4.0}, r.tp2_alone_s = {0.8, 6.4};
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1, 2, 3};
  k.plan = parallel::plan_from_flags({.tp = 2, .pp = 2, .micro_batches = 1, .schedule = "gpipe"}, 2, 4, 1, 1);
  const double waits = predict(k, in).pipeline_s;
  for (RankProfile& r : prof.ranks) r.tp2_alone_s = {0.4, 3.2};
  const double computes = predict(k, in).pipeline_s;
  EXPECT_NEAR(waits - computes, 2 * (0.3 + 0.5) / 2, 1e-9);
  // In between: alone 1.33x faster is a half share of CPU work (1 / (0.5 / 2 + 0.5) = 4 / 3).
  for (RankProfile& r : prof.ranks) r.tp2_alone_s = {0.6, 4.8};
  EXPECT_NEAR(waits - predict(k, in).pipeline_s, (0.3 + 0.5) / 2, 1e-9);
  // Timed as a pipeline's stages too (tp2_pipe_*, here at the same pace): none of it faster while
  // the other stage waits, however fast the pairs ran alone.
  for (RankProfile& r : prof.ranks) r.tp2_alone_s = {0.4, 3.2}, r.tp2_pipe_fwd_s = {0.3, 2.4}, r.tp2_pipe_bwd_s = {0.5, 4.0};
  EXPECT_NEAR(predict(k, in).pipeline_s, waits, 1e-9);
}

TEST(CostModel, HierarchicalSiteStepsAreCpuWorkOnSharedCores) {
  // 4 ranks of two sites on one machine's 2 cores (alone 2x faster), 1 ns of CPU per byte moved:
  // the site sum and the site all-gather go over loopback at CPU speed, not at the link's 7 GB/s.
  const Cluster c = make_cluster({2, 2}, {1e-5, 7e9}, {0.01, 1e8});
  ComputeProfile prof = make_profile(4, 0.01);
  share_one_pool(prof, 4, 1e-9);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1, 2, 3};
  k.plan = parallel::plan_from_flags({.dp = 4}, 2, 4, 4, 1);
  k.ranks_per_site = 2;
  const double C = 64, V = 128, bytes = 4 * (2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C);
  // All 4 ranks at once on 2 cores: site sum moves 2 x 2 x 1/2 of the bytes per rank, the
  // all-gather 2 x 1/2; across sites each half is all-reduced by 2 rings sharing the link.
  const double sum = 1e-9 * 2 * bytes * 4 / 2, gather = 1e-9 * bytes * 4 / 2;
  const double cross = ring_all_reduce_s(2, {0.01, 1e8}, bytes / 2, 1, 2);
  EXPECT_NEAR(predict(k, in).dp_comm_s, sum + cross + gather, 1e-9);
  // A quota (a testbed site of cpus = 0.5) slows the compute, not these bulk site steps.
  for (RankProfile& r : prof.ranks) r.alone_cores = 0.5;
  EXPECT_NEAR(predict(k, in).dp_comm_s, sum + cross + gather, 1e-9);
  // Half the CPU per byte: the site steps take half as long (what the test measures is theirs).
  for (RankProfile& r : prof.ranks) r.comm_cpu_s_per_byte = 0.5e-9;
  EXPECT_NEAR(predict(k, in).dp_comm_s, (sum + gather) / 2 + cross, 1e-9);
}

TEST(CostModel, AFlatReductionInsideASiteIsCpuWorkOnSharedCores) {
  // Two ranks of one site time-sharing one core (alone 2x faster), 1 ns of CPU per byte moved: the
  // gradient all-reduce over loopback (7 GB/s) costs what its bytes cost the CPU, after the
  // backward (no spare core to run it beside): each rank sends and receives 2 x 1/2 of the bytes.
  const Cluster c = make_cluster({2}, {1e-5, 7e9}, {});
  ComputeProfile prof = make_profile(2, 0.01);
  share_one_pool(prof, 2, 1e-9);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);
  const double C = 64, V = 128, bytes = 4 * (2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C);
  const double cpu = 1e-9 * 2 * bytes * 2 / 1.0;  // both ranks' bytes on the pool's one core
  EXPECT_NEAR(predict(k, in).dp_comm_s, cpu, 1e-9);
  for (RankProfile& r : prof.ranks) r.comm_cpu_s_per_byte = 0;  // not measured: the link's α-β
  EXPECT_NEAR(predict(k, in).dp_comm_s, ring_all_reduce_s(2, {1e-5, 7e9}, bytes, 1, 1), 1e-9);
}

TEST(CostModel, BytesSentAcrossSitesCostMoreCpu) {
  // 4 ranks of two sites on one machine's 2 cores; in the profile's ring the ranks that send to
  // their own site measured 0.5 ns per byte moved, those that send across 2 ns: 0.5 ns per byte
  // received or sent inside a site, 2 x 2 - 0.5 = 3.5 ns per byte sent across.
  const Cluster c = make_cluster({2, 2}, {1e-5, 7e9}, {0.01, 1e8});
  ComputeProfile prof = make_profile(4, 0.01);
  share_one_pool(prof, 4);
  for (int i = 0; i < 4; ++i) prof.ranks[static_cast<size_t>(i)].comm_cpu_s_per_byte = i % 2 ? 2e-9 : 0.5e-9;
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1, 2, 3};
  k.plan = parallel::plan_from_flags({.dp = 4}, 2, 4, 4, 1);
  const double C = 64, V = 128, B = 4 * (2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C);
  const Prediction flat = predict(k, in);
  k.ranks_per_site = 2;
  const Prediction hier = predict(k, in);
  // Flat ring: each rank sends 1.5 B, half of it across (2 of 4 edges): 0.5 (1.5 + 0.75) + 3.5 x
  // 0.75 = 3.75 ns x B, the ranks' own mean (0.5 and 2 ns x 3 B). Hierarchical: B + 0.5 B inside,
  // 0.5 B across: 0.5 (3 + 0.5) + 3.5 x 0.5 = 3.5 ns x B. The same compute; 2 cores.
  EXPECT_NEAR(hier.cpu_bound_s - flat.cpu_bound_s, 4 * (3.5e-9 - 3.75e-9) * B / 2, 1e-12);
}

TEST(CostModel, HierarchicalReductionMovesAShardAcrossSites) {
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.01, 1e8});
  const ComputeProfile prof = make_profile(4, 0.01);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate flat;
  flat.ranks = {0, 1, 2, 3};
  flat.plan = parallel::plan_from_flags({.dp = 4}, 2, 4, 4, 1);
  Candidate hier = flat;
  hier.ranks_per_site = 2;
  const double C = 64, V = 128, bytes = 4 * (2 * (12 * C * C + 13 * C) + V * C + 16 * C + 2 * C);
  EXPECT_NEAR(predict(flat, in).cross_site_bytes, 2 * 1.5 * bytes, 1e-6);  // 2 ring edges, 2(P-1)/P each
  EXPECT_NEAR(predict(hier, in).cross_site_bytes, 2 * bytes, 1e-6);        // 2 shards of 1/2, both ways
  hier.compress = true;
  EXPECT_NEAR(predict(hier, in).cross_site_bytes, bytes, 1e-6);            // bf16: half
}

TEST(CostModel, MemoryAgainstTheRankCaps) {
  const Cluster c = make_cluster({2}, {1e-4, 1e9}, {}, /*memory_gb=*/1e-3);  // ~1 MiB per rank
  const ComputeProfile prof = make_profile(2, 0.01);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.dp = 2}, 2, 2, 2, 1);
  const Prediction p = predict(k, in);
  const double est = parallel::estimate_memory(k.plan, in.model, 16, 0).total();
  EXPECT_NEAR(p.memory_bytes[0], est, 1e-6);
  EXPECT_FALSE(p.fits);
  EXPECT_NEAR(p.tightest_over_bytes, est - 1e-3 * 1024 * 1024 * 1024, 1);
  in.memory_cap_gb = 0;
  Cluster big = make_cluster({2}, {1e-4, 1e9}, {}, 1);
  in.cluster = &big;
  EXPECT_TRUE(predict(k, in).fits);
}

}  // namespace
}  // namespace slm::planner
