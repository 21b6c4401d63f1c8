// planner/stage_time.cpp: see stage_time.h. Each term is one formula with a comment naming what it
// models; sizes in bytes (fp32 activations, gradients and parameters: 4 B each).
#include "planner/stage_time.h"

#include <algorithm>

namespace slm::planner::cost {
namespace {

// A tp group of two ranks of one pool whose ranks timed a block split over tp 2 as it runs
// (RankProfile::tp2_*): one block's forward and backward per rank with its all-reduces, the
// means over the pool's pairs (two pairs of one testbed site differed by up to 35%, with the
// same work), and the share of them that runs faster when the pool's cores free. Alone a pair
// ran s = busy / alone times faster; the core-sharing simulator runs CPU work of a pair alone at
// r = min(pool ranks / 2, the pool's speed-up) (planner/core_sharing.h), so a share φ with
// s = 1 / (φ / r + 1 - φ) is CPU work and the rest waits on the all-reduces.
// In a pipeline the pairs' times as pipeline stages (tp2_pipe_*, where measured; in phase they
// interleave), and none of it faster while the other pairs wait in the pipeline's fill and drain:
// in a traced pipeshard step on the AMX Xeon VM's rtt0 testbed (4 ranks, 2 vCPUs) the first
// stage's first forward, run while the second stage waited for it, took 311 ms and its last,
// beside the second stage's backward, 186. With the share above (0.59 there) every scenario's
// pipeshard in that VM's planner study was predicted 5-17% fast; with none of the time faster
// there, -5...+19% from the same profiles and -5...+15% in the study after
// (docs/planner_study_amx.md).
// Those and tp2_alone_s are timed only where ranks time-share cores, and there they
// scatter: the pairs of one pool, the same hardware, timed 30.7 and 21.5 ms at b = 2 in one
// profile of the planner study's rtt20 testbed, 21.9 and 21.5 in the one before, and training's
// steps after each agreed within 2% (2026-11-28b); so the mean over the pairs, each pair's
// timings along their least-squares line over the sizes (line_fit). In the planner study's kept
// profiles (three runs, 18 pipeshard rounds) that took the worst per-round error from 31% (the
// slowest pair, raw timings) to 13%.
Tp2Block tp2_block(const Ctx& x, const std::vector<int>& group, double b) {
  if (group.size() != 2) return {};
  const RankProfile &a = x.prof(group[0]), &c = x.prof(group[1]);
  if (a.host != c.host || a.tp2_fwd_s.empty() || c.tp2_fwd_s.empty()) return {};
  auto [it, fresh] = x.tp2_blocks.try_emplace({a.host, b});
  Tp2Block& out = it->second;
  if (!fresh) return out;
  const bool staged = x.c.plan.pp > 1 && !a.tp2_pipe_fwd_s.empty() && !c.tp2_pipe_fwd_s.empty();
  struct Timed {
    double fwd, bwd, alone;  // alone 0: not timed
  };
  std::vector<Timed> pairs;  // every rank of the pool that timed one
  for (const RankProfile& r : x.in.profile->ranks)
    if (r.host == a.host && !r.tp2_fwd_s.empty()) {
      const bool pipe = staged && !r.tp2_pipe_fwd_s.empty();
      pairs.push_back({at_batch(r.micro_batch, pipe ? line_fit(r.micro_batch, r.tp2_pipe_fwd_s) : r.tp2_fwd_s, b),
                       at_batch(r.micro_batch, pipe ? line_fit(r.micro_batch, r.tp2_pipe_bwd_s) : r.tp2_bwd_s, b),
                       r.tp2_alone_s.empty() ? 0 : at_batch(r.micro_batch, line_fit(r.micro_batch, r.tp2_alone_s), b)});
    }
  double busy = 0, alone = 0;
  for (const Timed& t : pairs) {
    out.fwd += t.fwd / pairs.size(), out.bwd += t.bwd / pairs.size();
    if (t.alone > 0) busy += t.fwd + t.bwd, alone += t.alone;
  }
  out.measured = true;
  if (staged) {
    out.shared = 0;
  } else if (alone > 0 && x.pool_of(group[0]) >= 0) {
    const Pool& p = x.pool(a.host);
    const double rate = std::clamp(p.ranks / 2, 1.0, std::max(1.0, p.speedup)), speedup = busy / alone;
    out.shared = rate > 1 ? std::clamp((1 - 1 / speedup) / (1 - 1 / rate), 0.0, 1.0) : 1.0;
  }
  return out;
}

// A virtual stage of one replica as stage_time sees it: its plan, its tp ranks, the micro-batch.
struct StageAt {
  const StagePlan& s;
  std::vector<int> tp_group;
  bool first, last;  // holds the embedding / the head
  double L, b;       // blocks, micro-batch
  bool rerun;        // the blocks' forward runs again in backward: recomputation, and ZeRO-3, which
                     // gathers each block again there and recomputes it (parallel/zero3.cpp)
  double block_f = 0, block_b = 0;  // one block's forward and backward (the slowest tp rank's share)
  double tp_outside_f = 0;          // tp's all-reduces outside the blocks (embedding, loss)
};

// The stage's compute on its slowest tp rank: its blocks (a forward again in the backward where
// they rerun), the embedding on the first stage, the head on the last.
StageTime stage_compute(const Ctx& x, StageAt& a) {
  const double t = a.s.tp, b = a.b;
  StageTime st;
  for (int r : a.tp_group) {
    const RankProfile& pr = x.prof(r);
    const double bf = pr.block_scale * at_batch(pr.micro_batch, pr.block_fwd_s, b);
    const double bb = pr.block_scale * at_batch(pr.micro_batch, pr.block_bwd_s, b);
    a.block_f = std::max(a.block_f, bf / t), a.block_b = std::max(a.block_b, bb / t);
    double f = a.L * bf / t, g = a.L * (bb + (a.rerun ? bf : 0)) / t;
    if (a.first) f += at_batch(pr.micro_batch, pr.embed_s, b) / 2, g += at_batch(pr.micro_batch, pr.embed_s, b) / 2;
    if (a.last) f += at_batch(pr.micro_batch, pr.head_fwd_s, b) / t, g += at_batch(pr.micro_batch, pr.head_bwd_s, b) / t;
    st.fwd = std::max(st.fwd, f), st.bwd = std::max(st.bwd, g);
  }
  st.compute_fwd = st.fwd, st.compute_bwd = st.bwd;
  return st;
}

// Whether the ranks talk over Gloo (CPU devices; GPUs use NCCL).
bool gloo_ranks(const Ctx& x, const std::vector<int>& plan_ranks) {
  for (int r : x.to_cluster(plan_ranks))
    if (x.cl.ranks[static_cast<size_t>(r)].device != "cpu") return false;
  return true;
}

// Tensor parallelism's all-reduces (Megatron f/g): 2 of the activation per block forward
// (attention, MLP), 2 backward; the vocabulary-parallel embedding 1 forward; the
// vocabulary-parallel loss 3 of (B, T).
void add_tp_comm(const Ctx& x, StageAt& a, StageTime& st) {
  const Plan& p = x.c.plan;
  const double t = a.s.tp, b = a.b, L = a.L, act = b * x.T * x.C * 4;  // one activation (B, T, C)
  const RingLinks ring = ring_links(x.cl, x.to_cluster(a.tp_group));
  const bool cross = ring.crosses_sites;
  const double ar = ring_all_reduce_s(a.s.tp, ring.slowest, act, 1, cross ? p.dp : 1, x.ar_hop(ring.slowest, cross, act));
  const double loss_ar =
      ring_all_reduce_s(a.s.tp, ring.slowest, b * x.T * 4, 1, 1, x.ar_hop(ring.slowest, cross, b * x.T * 4));
  // Where the tp ranks share cores, an all-reduce is CPU work (Gloo's and the kernel's copies of
  // every byte sent and received) at the rank's share of the cores with all busy, as its compute:
  // the 0.26 MB all-reduces of the planner study's pipeshard take ~1 ms there, not the link's 0.1.
  // At the rank's measured cost per byte (as pool_cpu_s, for the same reason: lockstep waits).
  double cpu = 0;
  for (int r : a.tp_group) {
    const RankProfile& pr = x.prof(r);
    if (pr.shares_cores) cpu = std::max(cpu, pr.comm_cpu_s_per_byte * 2 * 2 * (t - 1) / t * act * pr.host_ranks / x.pool_cores(pr));
  }
  if (const Tp2Block m = tp2_block(x, a.tp_group, b); m.measured) {
    // The blocks as the pair ran them; the embedding's all-reduce at a block forward's (2 each).
    const double rest_f = st.fwd - L * a.block_f, rest_b = st.bwd - L * (a.block_b + (a.rerun ? a.block_f : 0));
    const double blocks_f = L * m.fwd, blocks_b = L * (m.bwd + (a.rerun ? m.fwd : 0));
    a.tp_outside_f = (a.first ? std::max(ar, (m.fwd - a.block_f) / 2) : 0) + (a.last ? 3 * loss_ar : 0);
    st.fwd = rest_f + blocks_f + a.tp_outside_f;
    st.bwd = rest_b + blocks_b;
    st.shared_fwd = rest_f + m.shared * blocks_f, st.shared_bwd = rest_b + m.shared * blocks_b;
  } else {
    const double n_fwd = 2 * L + (a.first ? 1 : 0), n_bwd = 2 * L * (a.rerun ? 2 : 1);  // + the rerun forward's
    a.tp_outside_f = (a.first ? std::max(ar, cpu) : 0) + (a.last ? 3 * loss_ar : 0);
    st.fwd += n_fwd * std::max(ar, cpu) + (a.last ? 3 * loss_ar : 0);
    st.bwd += n_bwd * std::max(ar, cpu);
    if (cpu > ar) st.cpu_fwd = n_fwd * cpu, st.cpu_bwd = n_bwd * cpu;
  }
  if (x.c.sequence_parallel) {
    // The backward gathers the two column-parallel linears' inputs again: an all-reduce's bytes.
    st.bwd += L * std::max(ar, cpu);
    // Gloo has no reduce-scatter (an all-reduce, of which each rank keeps its part), so the
    // all-gather before each column-parallel linear comes on top of tp's bytes each way (and in
    // the rerun forward).
    if (gloo_ranks(x, a.tp_group))
      st.fwd += L * std::max(ar, cpu), st.bwd += L * std::max(ar, cpu) * (a.rerun ? 2 : 1);
  }
  st.cross_bytes += ring.site_edges * 2.0 * (a.s.tp - 1) / a.s.tp * act * (4 * L + (a.first ? 1 : 0));
}

// ZeRO-3: each block's parameters gathered before its forward (prefetched behind the block before
// it) and again before its backward, its gradient reduced after, blocking (parallel/zero3.cpp: the
// backward returns the reduced shard). The backward's gather starts as the block after it begins
// its backward, so it runs beside that block's recomputation, backward and reduction (Gloo runs
// two collectives at once, on its two worker threads) and is waited for only where it takes
// longer than all three. With tp, a rank's block is its slice (12C²/t + 7C/t + 6C parameters),
// its dp group one of the t concurrent ones, and a block's forward and backward include tp's
// all-reduces (the backward's: the rerun forward's too, StageAt::rerun, and its compute is
// compute on shared cores). `rest_f`, `rest_b`: the stage's compute outside its blocks (tp's
// all-reduces there are in a.tp_outside_f).
void add_zero3_comm(const Ctx& x, int k, const StageAt& a, double rest_f, double rest_b, StageTime& st) {
  const Plan& p = x.c.plan;
  const double L = a.L, t = a.s.tp;
  const std::vector<int> g = dp_group(p, k, 0);
  const RingLinks ring = ring_links(x.cl, x.to_cluster(g));
  const double block_bytes = block_params(x, a.s.tp) * 4, P = p.dp;
  const bool cross = ring.crosses_sites;
  const int share = cross ? a.s.tp : 1;  // the tp ranks' dp rings share the site link
  const double gather =
      ring_all_gather_s(p.dp, x.ag_link(ring), block_bytes, 1, share, x.ag_hop(ring.slowest, cross, block_bytes));
  const double reduce =
      ring_all_reduce_s(p.dp, ring.slowest, block_bytes, 1, share, x.ar_hop(ring.slowest, cross, block_bytes));
  const double bf = (st.fwd - rest_f - a.tp_outside_f) / L;  // a block's forward, tp's all-reduces included
  const double fb = (st.bwd - rest_b) / L;  // its rerun forward and backward
  st.fwd = rest_f + a.tp_outside_f + L * std::max(bf, gather);
  st.bwd = rest_b + L * std::max(fb + reduce, gather);  // every block recomputed in backward
  // The dp group's ring is shared by the P replicas (their bytes are summed): each carries 1/P.
  st.cross_bytes += t * ring.site_edges * L * block_bytes * ((P - 1) / P * 2 + 2 * (P - 1) / P) / P;
}

}  // namespace

StageTime stage_time(const Ctx& x, int k, int rep, double b) {
  const Plan& p = x.c.plan;
  const StagePlan& s = p.stages[static_cast<size_t>(k)];
  const bool zero3 = p.zero == 3 && p.dp > 1;
  StageAt a{s, {}, k == 0, static_cast<size_t>(k) + 1 == p.stages.size(), static_cast<double>(s.end - s.first), b,
            x.c.recompute || zero3};
  for (int j = 0; j < s.tp; ++j) a.tp_group.push_back(parallel::rank_at(p, k, rep, j));
  StageTime st = stage_compute(x, a);
  const double rest_f = st.fwd - a.L * a.block_f, rest_b = st.bwd - a.L * (a.block_b + (a.rerun ? a.block_f : 0));
  if (s.tp > 1) add_tp_comm(x, a, st);
  if (zero3) add_zero3_comm(x, k, a, rest_f, rest_b, st);
  return st;
}

}  // namespace slm::planner::cost
