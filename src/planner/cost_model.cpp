// planner/cost_model.cpp: see cost_model.h. Each term is one formula with a comment naming what it
// models; sizes in bytes (fp32 activations, gradients and parameters: 4 B each).
#include "planner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "parallel/pipeline/schedule.h"
#include "planner/comm_cost.h"
#include "planner/core_sharing.h"

namespace slm::planner {
namespace {

using parallel::Plan;
using parallel::StagePlan;

// Per CPU pool: its speed-up alone (all busy / one alone) and the cores one rank has alone, the
// means of its ranks' measurements.
struct Pool {
  double speedup = 1, alone_cores = 1;
  int index = 0;  // in pools_of's order: the SharedPool index (planner/core_sharing.h)
  double ranks = 1;
};
// CPU seconds per byte moving over the network costs a pool's ranks: each byte received and each
// byte sent inside a site (loopback), and each byte sent to another site. `slm profile` measures
// one number per rank, over a 4 MB all-reduce of every rank: a rank that sends to its own site
// measures the in-site cost, one that sends across half-and-half; on the testbed 0.5 and 2.0 ns
// (pairs measured alone: 0.4-0.55 ns inside a site, 2.3-2.6 across). One class only: both alike.
// What the machine spent beyond its ranks' own (machine_extra_cpu_s_per_byte: on the testbed the
// link emulator, which copies every packet that crosses sites) goes with the bytes the pool sent
// across in that ring (half of what each of those ranks moved), or where none did with every byte;
// it is the machine's, not the pool's (cpu_bound_s).
struct CommCpu {
  double in_site = 0, sent_across = 0;
  double extra_in_site = 0, extra_sent_across = 0;  // the machine's CPU beyond the ranks', alike
};
std::map<int, CommCpu> comm_cpu_of(const ComputeProfile& p, const Cluster& c) {
  struct Measured {
    std::vector<double> in, across;  // own CPU of the ranks that send in site / across
    double extra = 0;                // the pool's share of the machine's extra, per byte a rank moved
  };
  std::map<int, Measured> by_pool;
  const int W = static_cast<int>(p.ranks.size());
  for (int r = 0; r < W && W == c.world(); ++r) {
    const RankProfile& rp = p.ranks[static_cast<size_t>(r)];
    if (rp.comm_cpu_s_per_byte <= 0) continue;
    Measured& m = by_pool[rp.host];
    (c.ranks[static_cast<size_t>(r)].site == c.ranks[static_cast<size_t>((r + 1) % W)].site ? m.in : m.across)
        .push_back(rp.comm_cpu_s_per_byte);
    m.extra += rp.machine_extra_cpu_s_per_byte;
  }
  auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
  std::map<int, CommCpu> out;
  for (const auto& [host, m] : by_pool) {
    CommCpu& cc = out[host];
    cc.in_site = m.in.empty() ? mean(m.across) : mean(m.in);
    cc.sent_across = m.across.empty() ? cc.in_site : std::max(cc.in_site, 2 * mean(m.across) - cc.in_site);
    if (!m.across.empty()) cc.extra_sent_across = 2 * m.extra / m.across.size();
    else cc.extra_in_site = cc.extra_sent_across = m.extra / m.in.size();
  }
  return out;
}
std::map<int, Pool> pools_of(const ComputeProfile& p) {
  std::map<int, std::vector<const RankProfile*>> members;
  for (const RankProfile& r : p.ranks) members[r.host].push_back(&r);
  std::map<int, Pool> out;
  for (const auto& [host, rs] : members) {
    Pool& pool = out[host];
    pool.index = static_cast<int>(out.size()) - 1, pool.ranks = rs.front()->host_ranks;
    pool.speedup = pool.alone_cores = 0;
    for (const RankProfile* r : rs) pool.speedup += r->solo_speedup / rs.size(), pool.alone_cores += r->alone_cores / rs.size();
  }
  return out;
}

// A tp pair's block as its pool measured it (tp2_block below).
struct Tp2Block {
  bool measured = false;
  double fwd = 0, bwd = 0, shared = 1;  // per rank, s; the share that speeds up when cores free
};

struct Ctx {
  const Candidate& c;
  const CostInputs& in;
  const Cluster& cl;
  double C, T, V;
  int cluster_rank(int plan_rank) const { return c.ranks[static_cast<size_t>(plan_rank)]; }
  int site(int plan_rank) const { return cl.ranks[static_cast<size_t>(cluster_rank(plan_rank))].site; }
  const RankProfile& prof(int plan_rank) const {
    return in.profile->ranks[static_cast<size_t>(cluster_rank(plan_rank))];
  }
  // Per CPU pool: its speed-up alone and its cores (ranks / speed-up x a rank's cores alone), one
  // number each however noisy each rank's solo run was. Made on first use: only ranks that share
  // cores ask (the search predicts thousands of layouts).
  mutable std::map<int, Pool> pools;
  const std::map<int, Pool>& all_pools() const {
    if (pools.empty()) pools = pools_of(*in.profile);
    return pools;
  }
  const Pool& pool(int host) const { return all_pools().at(host); }
  // The pool plan rank r computes in (an index into shared_pools()), -1 where it has cores of its own.
  int pool_of(int plan_rank) const {
    const RankProfile& rp = prof(plan_rank);
    return rp.shares_cores && rp.host_ranks > 1 ? pool(rp.host).index : -1;
  }
  std::vector<SharedPool> shared_pools() const {
    std::vector<SharedPool> out(all_pools().size());
    for (const auto& [host, p] : all_pools()) out[static_cast<size_t>(p.index)] = SharedPool{p.ranks, p.speedup};
    return out;
  }
  double pool_cores(const RankProfile& rp) const {
    const Pool& p = pool(rp.host);
    return rp.host_ranks / p.speedup * p.alone_cores;
  }
  // The cores a pool's bulk transfers (the gradient reduction's site steps) get: its cores as if it
  // had no CPU quota. Measured on the testbed (bench_collectives site, 2026-11-26): a site of
  // cpus = 0.5 sums 20 MB inside itself in 28 ms, the full site beside it in 26 ms; and het20's
  // hierarchical dp took 3.47 s over 8 steps against 4.28 predicted at the quota's cores. The tp
  // all-reduces, small and between compute, do pay the quota (stage_time).
  double comm_cores(const RankProfile& rp) const { return rp.host_ranks / pool(rp.host).speedup; }
  mutable std::map<int, CommCpu> comm_cpus;
  mutable std::map<std::pair<int, double>, Tp2Block> tp2_blocks;  // per (pool, micro-batch): tp2_block's
  CommCpu comm_cpu(int host) const {
    if (comm_cpus.empty()) comm_cpus = comm_cpu_of(*in.profile, cl);
    auto it = comm_cpus.find(host);
    return it == comm_cpus.end() ? CommCpu{} : it->second;
  }
  std::vector<int> to_cluster(const std::vector<int>& plan_ranks) const {
    std::vector<int> v;
    for (int r : plan_ranks) v.push_back(cluster_rank(r));
    return v;
  }
  // One hop of a ring all-reduce / all-gather moving `bytes` in all, whose slowest link is l: as
  // the probe measured it on that link (planner/comm_cost.h) when the ring crosses sites, as the
  // probe's ring does (inside a site a ring of links as fast can cost less per hop: at 0 ms the
  // world ring's hops took 1.9 ms, a site's tp pair does not pay that), else l's α.
  double ar_hop(const Link& l, bool crosses, double bytes) const {
    return crosses ? hop_latency_s(l, cl.hops.all_reduce, cl.hops.link_alpha_s, bytes) : l.alpha_s;
  }
  // The link a flat all-gather over `ring` moves its bytes on: where it crosses sites as the
  // probe's ring does, at most the rate the probe's 16 MiB all-gather reached (MeasuredHops; on
  // the testbed half the link's: ZeRO-1/2 at 20 ms came out 16-24% fast without it).
  Link ag_link(const RingLinks& ring) const {
    Link l = ring.slowest;
    const MeasuredHops& h = cl.hops;
    if (ring.crosses_sites && h.all_gather_Bps > 0 && probed_link(l, h.link_alpha_s))
      l.beta_Bps = std::min(l.beta_Bps, h.all_gather_Bps);
    return l;
  }
  double ag_hop(const Link& l, bool crosses, double bytes) const {
    return crosses ? hop_latency_s(l, cl.hops.all_gather, cl.hops.link_alpha_s, bytes) : l.alpha_s;
  }
};

// Parameters of a stage held by one of its tp ranks (as parallel::estimate_memory counts them).
double stage_params(const Ctx& x, const StagePlan& s, size_t k, size_t stages) {
  const double t = s.tp, L = static_cast<double>(s.end - s.first), C = x.C;
  double n = L * (12 * C * C / t + 7 * C / t + 6 * C);
  if (k == 0) n += x.V * C / t + static_cast<double>(x.in.model.block_size) * C;
  if (k + 1 == stages) n += 2 * C;
  return n;
}

// Members of the group of plan ranks holding (stage k, tp rank j) in every replica.
std::vector<int> dp_group(const Plan& p, int k, int j) {
  std::vector<int> g;
  for (int r = 0; r < p.dp; ++r) g.push_back(parallel::rank_at(p, k, r, j));
  return g;
}

// The hierarchical split of a dp group, as comm::make_wan_group makes it: L ranks in each of S
// sites (equal counts), else none (S = 0).
struct Hier {
  int S = 0, L = 0;
  Link local, cross;
};
Hier hierarchy_of(const Ctx& x, const std::vector<int>& group) {
  Hier h;
  if (x.c.ranks_per_site <= 0 || group.size() < 2) return h;
  std::map<int64_t, std::vector<int>> by_site;  // runtime rule: site = plan rank / ranks_per_site
  for (int r : group) by_site[r / x.c.ranks_per_site].push_back(r);
  if (by_site.size() < 2) return h;
  for (const auto& [s, v] : by_site)
    if (v.size() != by_site.begin()->second.size()) return h;
  h.S = static_cast<int>(by_site.size());
  h.L = static_cast<int>(by_site.begin()->second.size());
  h.local = ring_links(x.cl, x.to_cluster(by_site.begin()->second)).slowest;
  std::vector<int> cross;
  for (const auto& [s, v] : by_site) cross.push_back(v[0]);
  h.cross = ring_links(x.cl, x.to_cluster(cross)).slowest;
  if (h.L == 1) h.local = Link{0, kUnlimitedBps};
  return h;
}

// Gradient reduction of one stage's dp group after a backward of `bwd_s`: exposed time and bytes
// across sites. Buckets become ready evenly through the backward; a flat all-reduce of a bucket
// starts when it is ready and a lane is free: Gloo runs kGlooLanes collectives of a process group
// at once (its worker threads), each on its own window, sharing the link's rate; the
// hierarchical path sums in the site
// during backward but does its cross-site step and site all-gather after it (comm/hierarchy.cpp
// runs them when the reduction is waited for).
struct Reduce {
  double exposed_s = 0, cross_bytes = 0;
};

// A collective in which every member of `group` moves `moved` bytes (sent + received), `flows`
// such groups at once: where members share a CPU pool, at least the pool's CPU work for it
// (comm_cpu_s_per_byte per byte, over its cores without a quota: Ctx::comm_cores). Inside a
// testbed site the "link" is loopback and this, not its rate, is what a step pays. The rank's own
// measurement, not the pool's in-site cost (Ctx::comm_cpu): a blocking collective of ranks
// time-sharing cores also waits for its peers to be scheduled, and at the in-site cost the
// studies' hierarchical dp came out 8-23% low.
double pool_cpu_s(const Ctx& x, const std::vector<int>& group, double moved, int flows) {
  std::map<int, int> members;  // per pool: members of the group in it
  double worst = 0;
  for (int r : group) {
    const RankProfile& rp = x.prof(r);
    if (!rp.shares_cores || rp.comm_cpu_s_per_byte <= 0) continue;
    const int active = std::min(rp.host_ranks, ++members[rp.host] * flows);
    worst = std::max(worst, rp.comm_cpu_s_per_byte * moved * active / x.comm_cores(rp));
  }
  return worst;
}
constexpr int kGlooLanes = 2;
Reduce reduce_grads(const Ctx& x, const std::vector<int>& group, double bytes, double bwd_s, int flows, bool overlap) {
  Reduce out;
  const int P = static_cast<int>(group.size());
  if (P < 2 || bytes <= 0) return out;
  const double bucket = x.in.bucket_mb * 1024 * 1024;
  const int nb = std::max(1, static_cast<int>(std::ceil(bytes / bucket)));
  const double bb = bytes / nb;
  const Hier h = hierarchy_of(x, group);
  const RingLinks ring = ring_links(x.cl, x.to_cluster(group));
  const int ch = x.c.channels;
  // Per bucket: the part overlapped with backward (flat: all of it; hierarchical: the site sum),
  // and the part after it (hierarchical: cross-site sum + site all-gather).
  double during = 0, after = 0;
  const int lanes = std::min(kGlooLanes, nb);
  if (h.S == 0) {
    // At least its CPU where members share cores: a dp group inside a testbed site (pp 2 x dp 2)
    // rings over loopback, and its reduction after a single micro-batch's backward took 60-190 ms
    // at rtt100 (2026-11-27e), where the ring at the link's α-β alone came to 15.
    during = std::max(ring_all_reduce_s(P, ring.slowest, bb, ch, (ring.crosses_sites ? flows : 1) * lanes,
                                        x.ar_hop(ring.slowest, ring.crosses_sites, bb)),
                      pool_cpu_s(x, group, 2 * 2.0 * (P - 1) / P * bb, flows));
    out.cross_bytes = ring.site_edges * 2.0 * (P - 1) / P * bytes * flows;
  } else {
    const int cross_flows = h.L * flows;  // every site position's ring shares the site link
    // Every site sums, then all-gathers, at once: over loopback on shared cores, CPU-bound.
    during = std::max(ring_all_reduce_s(h.L, h.local, bb, 1, 1, x.ar_hop(h.local, false, bb)),
                      pool_cpu_s(x, group, 2 * 2.0 * (h.L - 1) / h.L * bb, flows));
    const double shard = bb / h.L;
    if (x.c.compress) {  // all-gather of the shards' bf16 bits, summed locally
      after = ring_all_gather_s(h.S, h.cross, h.S * shard / 2, 1, cross_flows,
                                x.ag_hop(h.cross, true, h.S * shard / 2));
      out.cross_bytes = h.S * (h.S - 1.0) * (bytes / h.L / 2) * h.L * flows;
    } else {
      after = ring_all_reduce_s(h.S, h.cross, shard, ch, cross_flows, x.ar_hop(h.cross, true, shard));
      out.cross_bytes = h.S * 2.0 * (h.S - 1) / h.S * (bytes / h.L) * h.L * flows;
    }
    after += std::max(ring_all_gather_s(h.L, h.local, bb, 1, 1, x.ag_hop(h.local, false, bb)),
                      pool_cpu_s(x, group, 2 * (h.L - 1.0) / h.L * bb, flows));
  }
  std::vector<double> lane_free(static_cast<size_t>(lanes), 0.0);
  double end = 0;
  for (int i = 0; i < nb; ++i) {  // the next bucket on the lane that frees first
    double& lane = *std::min_element(lane_free.begin(), lane_free.end());
    lane = std::max(lane, overlap ? bwd_s * (i + 1) / nb : bwd_s) + during;
    end = std::max(end, lane);
  }
  // Without a spare core the reduction does not run beside the backward (overlap = false): it
  // starts when the backward ends.
  out.exposed_s = std::max(0.0, end - bwd_s) + nb * after;
  return out;
}

// DiLoCo: the members of a dp group in the site of its first member (the runtime's rule: site =
// plan rank / ranks_per_site).
std::vector<int> in_site(const Ctx& x, const std::vector<int>& group) {
  std::vector<int> out;
  for (int r : group)
    if (r / x.c.ranks_per_site == group[0] / x.c.ranks_per_site) out.push_back(r);
  return out;
}

// DiLoCo's outer sync of one stage's dp group, amortised over its inner steps (parallel/diloco.cpp):
// each site rank all-gathers its 1/L piece of the int8 pseudo-gradient (1 byte per value + a 4-byte
// scale per 1024) with the same piece of the other sites, then the site all-gathers the merged
// fp32 parameters.
Reduce outer_sync(const Ctx& x, const std::vector<int>& group, double bytes, int flows) {
  Reduce out;
  const Hier h = hierarchy_of(x, group);
  if (h.S == 0) return out;
  const double H = static_cast<double>(x.c.diloco_steps);
  const double piece = bytes / 4 / h.L * (1 + 4.0 / 1024);
  const double s = ring_all_gather_s(h.S, h.cross, h.S * piece, 1, h.L * flows, x.ag_hop(h.cross, true, h.S * piece)) +
                   ring_all_gather_s(h.L, h.local, bytes, 1, 1, x.ag_hop(h.local, false, bytes));
  out.exposed_s = s / H;
  out.cross_bytes = h.S * (h.S - 1.0) * piece * h.L * flows / H;
  return out;
}

// A tp group of two ranks of one pool whose ranks timed a block split over tp 2 as it runs
// (RankProfile::tp2_*): one block's forward and backward per rank with its all-reduces, the
// means over the pool's pairs (two pairs of one testbed site differed by up to 35%, with the
// same work), and the share of them that runs faster when the pool's cores free. Alone a pair
// ran s = busy / alone times faster; the core-sharing simulator runs CPU work of a pair alone at
// r = min(pool ranks / 2, the pool's speed-up) (planner/core_sharing.h), so a share φ with
// s = 1 / (φ / r + 1 - φ) is CPU work and the rest waits on the all-reduces.
// In a pipeline the pairs' times as pipeline stages (tp2_pipe_*, where measured; in phase they
// interleave). Those and tp2_alone_s are timed only where ranks time-share cores, and there they
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
  if (alone > 0 && x.pool_of(group[0]) >= 0) {
    const Pool& p = x.pool(a.host);
    const double rate = std::clamp(p.ranks / 2, 1.0, std::max(1.0, p.speedup)), speedup = busy / alone;
    out.shared = rate > 1 ? std::clamp((1 - 1 / speedup) / (1 - 1 / rate), 0.0, 1.0) : 1.0;
  }
  return out;
}

// Forward and backward time of virtual stage k for replica `rep` (its slowest tp rank), with the
// tp all-reduces and, for ZeRO-3, the per-block parameter gathers and gradient reductions.
struct StageTime {
  double fwd = 0, bwd = 0, cross_bytes = 0;
  double compute_fwd = 0, compute_bwd = 0;  // the compute share of fwd and bwd (cores can speed it up)
  double cpu_fwd = 0, cpu_bwd = 0;          // communication that is CPU work on shared cores (the same)
  double shared_fwd = -1, shared_bwd = -1;  // what speeds up when cores free, where measured (a tp
                                            // pair's blocks); -1: compute + cpu
};

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

// ZeRO-3: each block's parameters gathered before its forward and again before its backward
// (prefetched: hidden behind the neighbouring block's compute), its gradient reduced after,
// blocking (parallel/zero3.cpp: the backward returns the reduced shard), behind the prefetch. With
// tp, a rank's block is its slice (12C²/t + 7C/t + 6C parameters), its dp group one of the t
// concurrent ones, and a block's forward and backward include tp's all-reduces (the backward's:
// the rerun forward's too, StageAt::rerun, and its compute is compute on shared cores). `rest_f`,
// `rest_b`: the stage's compute outside its blocks (tp's all-reduces there are in a.tp_outside_f).
void add_zero3_comm(const Ctx& x, int k, const StageAt& a, double rest_f, double rest_b, StageTime& st) {
  const Plan& p = x.c.plan;
  const double L = a.L, t = a.s.tp;
  const std::vector<int> g = dp_group(p, k, 0);
  const RingLinks ring = ring_links(x.cl, x.to_cluster(g));
  const double block_bytes = (12 * x.C * x.C / t + 7 * x.C / t + 6 * x.C) * 4, P = p.dp;
  const bool cross = ring.crosses_sites;
  const int share = cross ? a.s.tp : 1;  // the tp ranks' dp rings share the site link
  const double gather =
      ring_all_gather_s(p.dp, x.ag_link(ring), block_bytes, 1, share, x.ag_hop(ring.slowest, cross, block_bytes));
  const double reduce =
      ring_all_reduce_s(p.dp, ring.slowest, block_bytes, 1, share, x.ar_hop(ring.slowest, cross, block_bytes));
  const double bf = (st.fwd - rest_f - a.tp_outside_f) / L;  // a block's forward, tp's all-reduces included
  const double fb = (st.bwd - rest_b) / L;  // its rerun forward and backward
  st.fwd = rest_f + a.tp_outside_f + L * std::max(bf, gather);
  st.bwd = rest_b + L * (std::max(fb, gather) + reduce);  // every block recomputed in backward
  // The dp group's ring is shared by the P replicas (their bytes are summed): each carries 1/P.
  st.cross_bytes += t * ring.site_edges * L * block_bytes * ((P - 1) / P * 2 + 2 * (P - 1) / P) / P;
}

// Stage k of replica `rep` at micro-batch b: its compute, then tp's and ZeRO-3's communication.
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

}  // namespace

double model_flops(const parallel::ModelShape& m, int64_t batch, int64_t seq_len) {
  const double B = static_cast<double>(batch), s = static_cast<double>(seq_len), h = static_cast<double>(m.n_embd);
  const double L = static_cast<double>(m.n_layer), V = static_cast<double>(m.vocab_padded);
  return (m.recompute ? 96 : 72) * B * s * h * h * L * (1 + s / (6 * h)) + 6 * B * s * h * V;
}

namespace {

// The pipeline part of one step: every replica's schedule simulated (replicas that cost the same
// once; all together where ranks share cores, planner/core_sharing.h).
struct PipelinePass {
  std::vector<double> finish, last_bwd;  // per pipeline rank: schedule end, last micro-batch's backward
  double makespan = 0, bubble = 0, cross_bytes = 0;
};

// Stage costs of one replica (micro-batch b) for the simulators, the CPU share of each, the pools
// its ranks compute in (Ctx::pool_of), and the bytes they move across sites.
SharedReplica replica_costs(const Ctx& x, int rep, double b, double* cross) {
  const Plan& p = x.c.plan;
  const size_t S = p.stages.size();
  const double M = static_cast<double>(p.micro_batches), act = b * x.T * x.C * 4;
  SharedReplica out;
  parallel::pipeline::StageCosts& sc = out.time;
  for (size_t k = 0; k < S; ++k) {
    const int K = static_cast<int>(k);
    const StageTime st = stage_time(x, K, rep, b);
    sc.fwd.push_back(st.fwd), sc.bwd.push_back(st.bwd);
    out.cpu_fwd.push_back(st.shared_fwd >= 0 ? st.shared_fwd : st.compute_fwd + st.cpu_fwd);
    out.cpu_bwd.push_back(st.shared_bwd >= 0 ? st.shared_bwd : st.compute_bwd + st.cpu_bwd);
    *cross += st.cross_bytes * M;
    double send = 0, notice = 0;
    if (k + 1 < S) {  // the activation to the next stage (its gradient back): 1/tp each with equal tp
      const StagePlan &a = p.stages[k], &n = p.stages[k + 1];
      const int from = parallel::rank_at(p, K, rep, 0), to = parallel::rank_at(p, K + 1, rep, 0);
      const bool crosses = x.site(from) != x.site(to);
      const Link& l = x.cl.between(x.cluster_rank(from), x.cluster_rank(to));
      send = p2p_s(l, act / (a.tp == n.tp ? a.tp : 1), crosses ? p.dp * a.tp : 1);
      notice = l.alpha_s;
      if (a.tp == n.tp && a.tp > 1) {  // the receivers all-gather the pieces over their tp group
        std::vector<int> g;
        for (int j = 0; j < n.tp; ++j) g.push_back(x.cluster_rank(parallel::rank_at(p, K + 1, rep, j)));
        const RingLinks ring = ring_links(x.cl, g);
        send += ring_all_gather_s(n.tp, x.ag_link(ring), act, 1, 1, x.ag_hop(ring.slowest, ring.crosses_sites, act));
      }
      if (crosses) *cross += 2 * M * act;
    }
    sc.send_fwd.push_back(send), sc.notice_fwd.push_back(notice);
  }
  sc.send_bwd.assign(S, 0), sc.notice_bwd.assign(S, 0);
  sc.receives_ahead = parallel::pipeline::kReceivesAhead;  // the executor's window of posted receives
  for (size_t k = 1; k < S; ++k) sc.send_bwd[k] = sc.send_fwd[k - 1], sc.notice_bwd[k] = sc.notice_fwd[k - 1];
  for (int r = 0; r < p.pp; ++r) {
    std::map<int, double> in_pool;  // the rank's tp group, by the pool each member computes in
    for (int j = 0; j < p.stages[static_cast<size_t>(r)].tp; ++j)
      if (const int pool = x.pool_of(parallel::rank_at(p, r, rep, j)); pool >= 0) in_pool[pool] += 1;
    out.pools.emplace_back(in_pool.begin(), in_pool.end());
  }
  return out;
}

PipelinePass simulate_replicas(const Ctx& x, const std::vector<int>& rep_of, const std::vector<double>& start) {
  const Plan& p = x.c.plan;
  const int P = p.pp, v = p.virtual_stages, M = static_cast<int>(p.micro_batches);
  std::vector<std::vector<parallel::pipeline::Action>> lists;
  for (int r = 0; r < P; ++r) lists.push_back(parallel::pipeline::schedule_actions(p.schedule, P, r, M, v));
  PipelinePass out;
  out.finish.assign(static_cast<size_t>(P), 0), out.last_bwd.assign(static_cast<size_t>(P), 0);
  // Ranks that share cores run faster while others of their machine wait: all replicas at once.
  bool sharing = false;
  for (size_t pr = 0; pr < x.c.ranks.size(); ++pr) sharing = sharing || x.pool_of(static_cast<int>(pr)) >= 0;
  std::vector<int> copies(static_cast<size_t>(p.dp), 0);  // replicas each representative stands for
  for (int r = 0; r < p.dp; ++r) ++copies[static_cast<size_t>(sharing ? r : rep_of[static_cast<size_t>(r)])];
  std::vector<int> costed;  // the replicas simulated
  std::vector<SharedReplica> reps;
  for (int rep = 0; rep < p.dp; ++rep) {
    if (copies[static_cast<size_t>(rep)] == 0) continue;
    double cross = 0;
    reps.push_back(replica_costs(x, rep, static_cast<double>(p.micro_batch[static_cast<size_t>(rep)]), &cross));
    reps.back().time.start = start;
    costed.push_back(rep);
    out.cross_bytes += cross * copies[static_cast<size_t>(rep)];
    for (int r = 0; r < P; ++r) {
      double lb = 0;  // the rank's last backward: its chunks' backward of one micro-batch
      for (int ck = 0; ck < v; ++ck) lb += reps.back().time.bwd[static_cast<size_t>(ck * P + r)];
      out.last_bwd[static_cast<size_t>(r)] = std::max(out.last_bwd[static_cast<size_t>(r)], lb);
    }
  }
  auto add = [&](size_t i, const std::vector<double>& finish, const std::vector<double>& idle, double makespan) {
    const double n_same = copies[static_cast<size_t>(costed[i])];
    for (int r = 0; r < P; ++r) {
      out.finish[static_cast<size_t>(r)] = std::max(out.finish[static_cast<size_t>(r)], finish[static_cast<size_t>(r)]);
      out.bubble += idle[static_cast<size_t>(r)] * n_same / (P * p.dp);
    }
    out.makespan = std::max(out.makespan, makespan);
  };
  if (sharing) {
    const SharedSimulation sim = simulate_sharing(lists, v, reps, x.shared_pools());
    for (size_t i = 0; i < reps.size(); ++i) {
      std::vector<double> idle;
      for (double b : sim.busy[i]) idle.push_back(sim.makespan > 0 ? 1 - b / sim.makespan : 0);
      add(i, sim.finish[i], idle, sim.makespan);
    }
    return out;
  }
  std::map<std::vector<double>, parallel::pipeline::Simulation> sims;
  for (size_t i = 0; i < reps.size(); ++i) {
    const parallel::pipeline::StageCosts& sc = reps[i].time;
    std::vector<double> key = sc.fwd;
    key.insert(key.end(), sc.bwd.begin(), sc.bwd.end());
    key.insert(key.end(), sc.send_fwd.begin(), sc.send_fwd.end());
    key.insert(key.end(), sc.notice_fwd.begin(), sc.notice_fwd.end());
    key.insert(key.end(), sc.start.begin(), sc.start.end());
    auto it = sims.find(key);
    if (it == sims.end()) it = sims.emplace(key, parallel::pipeline::simulate(lists, v, sc)).first;
    add(i, it->second.finish, it->second.bubble, it->second.makespan);
  }
  return out;
}

// Bytes plan rank (stage k, replica rep, tp rank) sends per step, inside its site and across:
// tp all-reduces, stage-to-stage activations and gradients, the data-parallel reduction and ZeRO's
// gathers, the tied embedding. (Ring collectives: a rank receives as much as it sends; a ring's
// share across sites is its edges between sites over its ranks.)
struct Sent {
  double local = 0, cross = 0;
};
Sent bytes_sent(const Ctx& x, int k, int rep) {
  const Plan& p = x.c.plan;
  const size_t S = p.stages.size(), K = static_cast<size_t>(k);
  const StagePlan& s = p.stages[K];
  const double M = static_cast<double>(p.micro_batches), t = s.tp, L = static_cast<double>(s.end - s.first);
  const double act = static_cast<double>(p.micro_batch[static_cast<size_t>(rep)]) * x.T * x.C * 4;
  Sent out;
  auto add = [&](double bytes, double across) { out.cross += bytes * across, out.local += bytes * (1 - across); };
  auto ring_across = [&](const std::vector<int>& g) {
    return g.size() < 2 ? 0.0 : ring_links(x.cl, x.to_cluster(g)).site_edges / static_cast<double>(g.size());
  };
  const int me = parallel::rank_at(p, k, rep, 0);
  if (s.tp > 1) {  // Megatron's all-reduces
    std::vector<int> tp_group;
    for (int j = 0; j < s.tp; ++j) tp_group.push_back(parallel::rank_at(p, k, rep, j));
    add(M * (4 * L + (K == 0 ? 1 : 0)) * 2 * (t - 1) / t * act, ring_across(tp_group));
  }
  for (int n : {k - 1, k + 1})  // to the previous / next stage
    if (n >= 0 && static_cast<size_t>(n) < S) add(M * act / t, x.site(parallel::rank_at(p, n, rep, 0)) != x.site(me) ? 1 : 0);
  const double G = p.dp, params = stage_params(x, s, K, S), block = (12 * x.C * x.C / t + 7 * x.C / t + 6 * x.C) * 4;
  const std::vector<int> dp = dp_group(p, k, 0);
  const double dp_across = ring_across(dp);
  if (p.dp > 1 && p.zero < 3) {  // flat ring, or hierarchical: site sum, cross-site shard, site gather
    const Hier h = hierarchy_of(x, dp);
    const double B = 4 * params, S = h.S, L = h.L, n = p.zero == 2 ? M : 1;
    const double cross = x.c.compress ? (S - 1) * B / L / 2 : 2 * (S - 1) / S * B / L;
    if (h.S == 0) add(n * 2 * (G - 1) / G * B, dp_across);
    else add(n * (2 * (L - 1) / L * B + (L - 1) / L * B), 0), add(n * cross, 1);
  }
  if (p.dp > 1 && (p.zero == 1 || p.zero == 2)) add((G - 1) / G * 4 * params, x.c.zero_site ? 0 : dp_across);  // the updated shards
  if (p.dp > 1 && p.zero == 3) add(L * (2 * (G - 1) / G + 2 * (G - 1) / G) * block, dp_across);
  if (S > 1 && (K == 0 || K + 1 == S))
    add(x.V * x.C * 4 / t, x.site(parallel::rank_at(p, 0, rep, 0)) != x.site(parallel::rank_at(p, static_cast<int>(S) - 1, rep, 0)));
  return out;
}

// Ranks sharing a CPU pool (testbed sites, several CPU ranks per machine): moving bytes costs CPU
// (Gloo's threads, the kernel's copies) that the compute then lacks. A floor on the step per pool:
// its ranks' CPU work over its cores (Ctx::pool_cores): compute and optimizer (measured with all n
// busy, so each used cores / n of them) plus the CPU of the bytes it moves: each byte received and
// each byte sent inside the site at the pool's in-site cost, each byte sent across at its
// cross-site one (Ctx::comm_cpu), at the pool's cores without its quota (Ctx::comm_cores). And one
// per machine (RankProfile::machine): its pools' CPU work plus what the machine spends beyond the
// ranks' own on the bytes they move (on the testbed the link emulator, outside every site's
// quota), over the pools' cores without their quotas.
double cpu_bound_s(const Ctx& x, double optimizer_s) {
  const Plan& p = x.c.plan;
  struct Work {
    double cpu = 0, cores = 0;  // CPU seconds per step, cores
  };
  struct PoolWork {
    Work pool;         // its own floor's
    Work for_machine;  // its CPU with the machine's extra, its cores without a quota
    int machine = 0;
  };
  std::map<int, PoolWork> pools;
  for (int r = 0; r < p.pp; ++r)
    for (int rep = 0; rep < p.dp; ++rep)
      for (int j = 0; j < p.stages[static_cast<size_t>(r)].tp; ++j) {
        const RankProfile& rp = x.prof(parallel::rank_at(p, r, rep, j));
        if (!rp.shares_cores || rp.comm_cpu_s_per_byte <= 0) continue;
        const double b = static_cast<double>(p.micro_batch[static_cast<size_t>(rep)]);
        double compute = optimizer_s;
        Sent sent;
        for (int ck = 0; ck < p.virtual_stages; ++ck) {
          const StageTime st = stage_time(x, ck * p.pp + r, rep, b);
          compute += static_cast<double>(p.micro_batches) * (st.compute_fwd + st.compute_bwd);
          const Sent more = bytes_sent(x, ck * p.pp + r, rep);
          sent.local += more.local, sent.cross += more.cross;
        }
        const double cores = x.pool_cores(rp), compute_cpu = compute * cores / rp.host_ranks;
        const CommCpu cc = x.comm_cpu(rp.host);
        const double bytes_cpu = cc.in_site * (2 * sent.local + sent.cross) + cc.sent_across * sent.cross;
        const double extra_cpu = cc.extra_in_site * (2 * sent.local + sent.cross) + cc.extra_sent_across * sent.cross;
        PoolWork& w = pools[rp.host];
        w.pool.cpu += compute_cpu + bytes_cpu * cores / x.comm_cores(rp);
        w.pool.cores = cores;
        w.for_machine.cpu += compute_cpu + bytes_cpu + extra_cpu;
        w.for_machine.cores = x.comm_cores(rp);
        w.machine = rp.machine < 0 ? -1 - rp.host : rp.machine;
      }
  double bound = 0;
  std::map<int, Work> machines;
  for (const auto& [host, w] : pools) {
    bound = std::max(bound, w.pool.cpu / w.pool.cores);
    Work& m = machines[w.machine];
    m.cpu += w.for_machine.cpu, m.cores += w.for_machine.cores;
  }
  for (const auto& [machine, m] : machines) bound = std::max(bound, m.cpu / m.cores);
  return bound;
}

// Memory per rank (the plan's estimate plus the runtime's own) against each rank's cap: the rank
// closest to (or most over) its cap.
void memory_per_rank(const Ctx& x, Prediction* out) {
  const Candidate& c = x.c;
  const Plan& p = c.plan;
  Plan pm = p;
  if (c.zero_site || c.diloco_steps > 0) pm.zero_ranks_per_site = c.ranks_per_site;  // DiLoCo: ZeRO inside the site
  if (c.diloco_steps > 0) pm.sync_ranks_per_site = c.ranks_per_site;
  parallel::ModelShape m = x.in.model;
  m.recompute = c.recompute, m.sequence_parallel = c.sequence_parallel;
  const double gib = 1024.0 * 1024 * 1024;
  std::map<std::pair<int, int64_t>, double> cache;  // (pipeline rank, micro-batch) -> estimate
  out->memory_bytes.assign(c.ranks.size(), 0);
  double best_margin = -1e300;
  for (int r = 0; r < p.pp; ++r)
    for (int rep = 0; rep < p.dp; ++rep) {
      const int64_t mb = p.micro_batch[static_cast<size_t>(rep)];
      auto key = std::make_pair(r, pm.zero_ranks_per_site > 0 ? int64_t(-1 - rep) : mb);
      auto it = cache.find(key);
      if (it == cache.end())
        it = cache.emplace(key, parallel::estimate_memory(pm, m, x.in.seq_len, parallel::rank_at(pm, r, rep, 0)).total()).first;
      for (int j = 0; j < p.stages[static_cast<size_t>(r)].tp; ++j) {
        const int pr = parallel::rank_at(pm, r, rep, j), cr = x.cluster_rank(pr);
        const double need = it->second + x.prof(pr).overhead_bytes;
        out->memory_bytes[static_cast<size_t>(pr)] = need;
        double cap = x.cl.ranks[static_cast<size_t>(cr)].memory_gb * gib;
        if (x.in.memory_cap_gb > 0) cap = cap > 0 ? std::min(cap, x.in.memory_cap_gb * gib) : x.in.memory_cap_gb * gib;
        if (cap <= 0 || need - cap <= best_margin) continue;
        best_margin = need - cap;
        out->tightest_rank = cr, out->tightest_over_bytes = need - cap, out->tightest_cap_bytes = cap;
      }
    }
}

// What follows pipeline rank r's schedule (its chunks' parameters): the data-parallel reduction of
// its gradients after its last backward ends at `last_bwd` (exposed), then the optimizer, ZeRO-1/2's
// all-gather of the updated shard and DiLoCo's outer sync (amortised).
struct RankTail {
  Reduce reduce, outer;
  double gather = 0, optim = 0;
  double after_s() const { return optim + gather + outer.exposed_s; }  // what follows the reduction
};
RankTail rank_tail(const Ctx& x, int r, double last_bwd) {
  const Candidate& c = x.c;
  const Plan& p = c.plan;
  const StagePlan& s = p.stages[static_cast<size_t>(r)];
  double params = 0;
  for (int ck = 0; ck < p.virtual_stages; ++ck) {
    const size_t k = static_cast<size_t>(ck * p.pp + r);
    params += stage_params(x, p.stages[k], k, p.stages.size());
  }
  const std::vector<int> group = c.diloco_steps > 0 ? in_site(x, dp_group(p, r, 0)) : dp_group(p, r, 0);
  const double bytes = 4 * params;
  RankTail t;
  if (p.zero < 3) {
    bool overlap = true;
    for (int q : group) overlap = overlap && !x.prof(q).shares_cores;
    t.reduce = reduce_grads(x, group, bytes, last_bwd, s.tp, overlap);
    const auto M = static_cast<double>(p.micro_batches);
    if (p.zero == 2) t.reduce.exposed_s *= M, t.reduce.cross_bytes *= M;  // ZeRO-2 reduces every micro-batch
  }
  const Hier h = hierarchy_of(x, group);
  const int shards = p.zero >= 1 ? (c.zero_site && h.S > 0 ? h.L : static_cast<int>(group.size())) : 1;
  if ((p.zero == 1 || p.zero == 2) && shards > 1) {
    std::vector<int> zg = group;
    if (c.zero_site && h.S > 0) zg.resize(static_cast<size_t>(h.L));  // the site's ranks
    const RingLinks ring = ring_links(x.cl, x.to_cluster(zg));
    t.gather = ring_all_gather_s(shards, x.ag_link(ring), bytes, 1, ring.crosses_sites ? s.tp : 1,
                                 x.ag_hop(ring.slowest, ring.crosses_sites, bytes));
    t.reduce.cross_bytes += ring.site_edges * (shards - 1.0) / shards * bytes * s.tp;
  }
  for (int pr : s.ranks) t.optim = std::max(t.optim, params / shards * x.prof(pr).optim_s_per_param);
  if (c.diloco_steps > 0) t.outer = outer_sync(x, dp_group(p, r, 0), bytes, s.tp);
  return t;
}

// The tied embedding across a pipeline (parallel/pipeline/executor.cpp): the head's gradient
// follows the last activation gradient to the first stage (into a receive posted at the start),
// which waits for both (the latency is already in the schedule); the weights go to the last stage
// at the start of the next step, while the first stage computes its first forward: the receiver's
// notice (α), then α + bytes, against that forward and the activation's α. Adds the bytes it moves
// across sites to *cross_bytes.
double tied_embedding_s(const Ctx& x, double* cross_bytes) {
  const Plan& p = x.c.plan;
  const StagePlan& f = p.stages.front();
  const int a = f.ranks[0], b = p.stages[static_cast<size_t>(p.pp - 1)].ranks[0];
  const bool crosses = x.site(a) != x.site(b);
  const double bytes = x.V * x.C * 4 / f.tp;
  const Link& l = x.cl.between(x.cluster_rank(a), x.cluster_rank(b));
  const double move = p2p_s(l, bytes, crosses ? p.dp * f.tp : 1) - l.alpha_s;
  const double first_fwd = stage_time(x, 0, 0, static_cast<double>(p.micro_batch[0])).fwd;
  if (crosses) *cross_bytes += 2 * bytes * p.dp * f.tp;
  return move + std::max(0.0, l.alpha_s + move - first_fwd);
}

// The gradient norm (train/step.cpp): a blocking sum of one number over the group that shards the
// gradient (ZeRO: its dp group): latency only, as Gloo's ring runs it (small_all_reduce_s).
double zero_norm_s(const Ctx& x) {
  const Plan& p = x.c.plan;
  if (p.zero == 0 || p.dp <= 1) return 0;
  std::vector<int> zg = dp_group(p, 0, 0);
  const Hier h = hierarchy_of(x, zg);
  if ((x.c.zero_site || x.c.diloco_steps > 0) && h.S > 0) zg.resize(static_cast<size_t>(h.L));
  return small_all_reduce_s(x.cl, x.to_cluster(zg));
}

// The step's end across the pipeline (parallel/pipeline/executor.cpp): each pipeline rank sends its
// number of the norm to the others into receives posted at the start, so the rank whose gradients
// are done last (schedule end + exposed reduction) waits only for numbers still in flight (one link
// latency after each other rank's), then does its tail. A rank that waits longer than the first
// pipeline rank takes to end its step begins the next step (and posts its first receives) that much
// later: `pass` is simulated again with those starts. `end`: the longest step of a rank from its own
// start; `wait`: the norm's wait of the rank done last.
struct StepEnd {
  double end = 0, wait = 0;
};
StepEnd step_end(const Ctx& x, const std::vector<int>& rep, PipelinePass& pass, const std::vector<double>& reduce,
                 const std::vector<double>& tail) {
  const Plan& p = x.c.plan;
  const size_t P = static_cast<size_t>(p.pp);
  const auto alpha = [&](size_t a, size_t b) {
    const auto first_rank = [&](size_t k) { return x.cluster_rank(p.stages[k].ranks[0]); };
    return x.cl.between(first_rank(a), first_rank(b)).alpha_s;
  };
  std::vector<double> done(P), ends(P), start(P, 0.0);
  const auto settle = [&] {  // done, and each rank's end with the norm's wait
    for (size_t r = 0; r < P; ++r) done[r] = pass.finish[r] + reduce[r];
    for (size_t r = 0; r < P; ++r) {
      double ready = done[r];
      for (size_t k = 0; k < P; ++k)
        if (k != r) ready = std::max(ready, done[k] + alpha(k, r));
      ends[r] = ready + tail[r];
    }
  };
  settle();
  bool later = false;
  for (size_t r = 1; r < P; ++r) {
    start[r] = std::max(0.0, ends[r] - ends[0]);
    later = later || start[r] > 0;
  }
  if (later) {
    pass = simulate_replicas(x, rep, start);
    settle();
  }
  const size_t last = static_cast<size_t>(std::max_element(done.begin(), done.end()) - done.begin());
  StepEnd e;
  e.wait = ends[last] - tail[last] - done[last];
  for (size_t r = 0; r < P; ++r) e.end = std::max(e.end, ends[r] - start[r]);
  return e;
}

}  // namespace

// 1. The replicas' pipelines (where ranks share cores, at the speed their busy neighbours leave);
// 2. what follows each pipeline rank's schedule: the data-parallel reduction, the optimizer, ZeRO's
// all-gather, DiLoCo's sync; 3. the tied embedding; 4. the gradient norm and the step's end; then
// the floor of CPU work where ranks share cores, throughput, cost and memory.
Prediction predict(const Candidate& c, const CostInputs& in) {
  Ctx x{c, in, *in.cluster, static_cast<double>(in.model.n_embd), static_cast<double>(in.seq_len),
        static_cast<double>(in.model.vocab_padded), {}, {}, {}};
  const Plan& p = c.plan;
  Prediction out;
  const std::vector<int> rep = representative_of(c, in);
  PipelinePass pass = simulate_replicas(x, rep, {});
  out.cross_site_bytes = pass.cross_bytes;
  std::vector<double> reduce, tail;  // per pipeline rank: the exposed reduction; what follows it
  for (int r = 0; r < p.pp; ++r) {
    const RankTail t = rank_tail(x, r, pass.last_bwd[static_cast<size_t>(r)]);
    out.cross_site_bytes += t.reduce.cross_bytes + t.outer.cross_bytes;
    out.outer_sync_s = std::max(out.outer_sync_s, t.outer.exposed_s);
    out.dp_comm_s = std::max(out.dp_comm_s, t.reduce.exposed_s);
    out.zero_gather_s = std::max(out.zero_gather_s, t.gather);
    out.optimizer_s = std::max(out.optimizer_s, t.optim);
    reduce.push_back(t.reduce.exposed_s), tail.push_back(t.after_s());
  }
  if (p.stages.size() > 1) out.tied_s = tied_embedding_s(x, &out.cross_site_bytes);
  out.norm_s = zero_norm_s(x);
  const StepEnd e = step_end(x, rep, pass, reduce, tail);
  out.pipeline_s = pass.makespan, out.bubble = pass.bubble;
  out.step_s = e.end + out.tied_s + out.norm_s;  // the tied embedding, ZeRO's sum
  out.norm_s += e.wait;
  out.cpu_bound_s = cpu_bound_s(x, out.optimizer_s);
  out.step_s = std::max(out.step_s, out.cpu_bound_s);
  const double tokens = static_cast<double>(p.global_batch()) * x.T;
  out.tokens_per_s = tokens / out.step_s;
  parallel::ModelShape m = in.model;
  m.recompute = c.recompute, m.sequence_parallel = c.sequence_parallel;
  out.tflops_per_device = model_flops(m, p.global_batch(), in.seq_len) / out.step_s / c.ranks.size() / 1e12;
  for (int r : c.ranks) out.price_per_hour += x.cl.ranks[static_cast<size_t>(r)].price_per_hour;
  out.tokens_per_dollar = out.price_per_hour > 0 ? out.tokens_per_s * 3600 / out.price_per_hour : 0;
  memory_per_rank(x, &out);
  out.fits = out.tightest_rank < 0 || out.tightest_over_bytes <= 0;
  return out;
}

void assign_rank_classes(CostInputs& in) {
  const Cluster& c = *in.cluster;
  std::map<std::string, int> ids;
  in.rank_class.clear();
  for (int r = 0; r < c.world(); ++r) {
    const RankProfile& p = in.profile->ranks[static_cast<size_t>(r)];
    ComputeProfile one;
    one.ranks = {p};
    const RankSpec& s = c.ranks[static_cast<size_t>(r)];
    const std::string key = profile_to_json(one) + fmt::format("|{}|{}|{}", s.device, s.memory_gb, s.price_per_hour);
    in.rank_class.push_back(ids.emplace(key, static_cast<int>(ids.size())).first->second);
  }
}

std::vector<int> representative_of(const Candidate& c, const CostInputs& in) {
  const Plan& p = c.plan;
  std::vector<int> rep(static_cast<size_t>(p.dp));
  if (in.rank_class.empty()) {
    for (int r = 0; r < p.dp; ++r) rep[static_cast<size_t>(r)] = r;
    return rep;
  }
  std::map<std::vector<int64_t>, int> seen;
  for (int r = 0; r < p.dp; ++r) {
    std::vector<int64_t> sig{p.micro_batch[static_cast<size_t>(r)]};
    for (size_t k = 0; k < p.stages.size(); ++k)
      for (int j = 0; j < p.stages[k].tp; ++j) {
        const int cr = c.ranks[static_cast<size_t>(parallel::rank_at(p, static_cast<int>(k), r, j))];
        sig.push_back(in.rank_class[static_cast<size_t>(cr)]);
        sig.push_back(in.cluster->ranks[static_cast<size_t>(cr)].site);
      }
    rep[static_cast<size_t>(r)] = seen.emplace(sig, r).first->second;
  }
  return rep;
}

StageSeconds stage_seconds(const Candidate& c, const CostInputs& in, int k, int replica) {
  Ctx x{c, in, *in.cluster, static_cast<double>(in.model.n_embd), static_cast<double>(in.seq_len),
        static_cast<double>(in.model.vocab_padded), {}, {}, {}};
  const StageTime st = stage_time(x, k, replica, static_cast<double>(c.plan.micro_batch[static_cast<size_t>(replica)]));
  return {st.fwd, st.bwd};
}

double stage_compute_s(const Candidate& c, const CostInputs& in, int k, int replica) {
  const StageSeconds s = stage_seconds(c, in, k, replica);
  return s.forward + s.backward;
}

double stage_memory_over(const Candidate& c, const CostInputs& in, int k) {
  const Plan& p = c.plan;
  parallel::ModelShape m = in.model;
  m.recompute = c.recompute, m.sequence_parallel = c.sequence_parallel;
  Plan pm = p;
  if (c.zero_site || c.diloco_steps > 0) pm.zero_ranks_per_site = c.ranks_per_site;  // DiLoCo: ZeRO inside the site
  if (c.diloco_steps > 0) pm.sync_ranks_per_site = c.ranks_per_site;
  const double gib = 1024.0 * 1024 * 1024;
  double worst = -std::numeric_limits<double>::infinity();
  const int pipe = k % p.pp;
  std::map<int64_t, double> by_mb;  // without hybrid sharding the estimate depends on the micro-batch only
  for (int rep = 0; rep < p.dp; ++rep) {
    const int64_t mb = p.micro_batch[static_cast<size_t>(rep)];
    auto it = by_mb.find(mb);
    if (it == by_mb.end() || pm.zero_ranks_per_site > 0)
      it = by_mb.insert_or_assign(mb, parallel::estimate_memory(pm, m, in.seq_len, parallel::rank_at(pm, pipe, rep, 0)).total()).first;
    const double need = it->second;
    for (int j = 0; j < p.stages[static_cast<size_t>(pipe)].tp; ++j) {
      const int cr = c.ranks[static_cast<size_t>(parallel::rank_at(pm, pipe, rep, j))];
      double cap = in.cluster->ranks[static_cast<size_t>(cr)].memory_gb * gib;
      if (in.memory_cap_gb > 0) cap = cap > 0 ? std::min(cap, in.memory_cap_gb * gib) : in.memory_cap_gb * gib;
      if (cap > 0) worst = std::max(worst, need + in.profile->ranks[static_cast<size_t>(cr)].overhead_bytes - cap);
    }
  }
  return worst;
}

std::string family_of(const Candidate& c) {
  const Plan& p = c.plan;
  std::vector<std::string> parts;
  if (p.pp > 1) parts.push_back(fmt::format("pp {}", p.pp));
  if (p.stages[0].tp > 1) parts.push_back(fmt::format("tp {}", p.stages[0].tp));
  if (p.dp > 1 || parts.empty()) parts.push_back(fmt::format("dp {}", p.dp));
  std::string f = fmt::format("{}", fmt::join(parts, " x "));
  if (p.zero > 0) f += fmt::format(", ZeRO-{}{}", p.zero, c.zero_site ? " in site" : "");
  if (c.diloco_steps > 0) return f + fmt::format(", DiLoCo across sites every {} steps (int8)", c.diloco_steps);
  if (c.ranks_per_site > 0) f += c.compress ? ", hierarchical bf16" : ", hierarchical";
  return f;
}

std::string describe_candidate(const Candidate& c) {
  const Plan& p = c.plan;
  std::vector<int64_t> layers;
  for (int k = 0; k < p.pp; ++k) {
    int64_t n = 0;
    for (int ck = 0; ck < p.virtual_stages; ++ck) {
      const StagePlan& s = p.stages[static_cast<size_t>(ck * p.pp + k)];
      n += s.end - s.first;
    }
    layers.push_back(n);
  }
  std::set<int64_t> mbs(p.micro_batch.begin(), p.micro_batch.end());
  std::string mb = mbs.size() == 1 ? fmt::format("{}", *mbs.begin()) : fmt::format("[{}]", fmt::join(p.micro_batch, ","));
  std::string d = fmt::format("{}; {} x {} micro-batches of {}", family_of(c), p.schedule, p.micro_batches, mb);
  if (p.pp > 1) d += fmt::format(", layers {}", fmt::join(layers, "+"));
  if (p.virtual_stages > 1) d += fmt::format(" ({} chunks per rank)", p.virtual_stages);
  if (c.channels > 1) d += fmt::format(", {} channels", c.channels);
  if (c.recompute) d += ", recompute";
  if (c.sequence_parallel && p.stages.front().tp > 1) d += ", sequence parallel";
  return d;
}

}  // namespace slm::planner
