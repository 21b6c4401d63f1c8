// planner/cost_context.h: what every term of the cost model (planner/cost_model.h) reads about one
// candidate on one cluster: the plan's ranks, sites, links and profiles (Ctx), the CPU pools of
// ranks that time-share cores and what moving a byte costs them, and the plan's groups (a stage's
// parameters, its data-parallel group, that group's split into sites). Owns Ctx, make_ctx, Pool,
// pools_of, CommCpu, comm_cpu_of, Tp2Block, stage_params, dp_group, Hier, hierarchy_of.
// Internal to the cost model (namespace planner::cost). Pure: no torch, no c10d.
#pragma once
#include <map>
#include <utility>
#include <vector>

#include "planner/comm_cost.h"
#include "planner/core_sharing.h"
#include "planner/cost_model.h"

namespace slm::planner::cost {

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
std::map<int, CommCpu> comm_cpu_of(const ComputeProfile& p, const Cluster& c);
std::map<int, Pool> pools_of(const ComputeProfile& p);

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

Ctx make_ctx(const Candidate& c, const CostInputs& in);

// Parameters of a stage held by one of its tp ranks (as parallel::estimate_memory counts them);
// of one block (a tp rank's slice); a stage's outside its blocks (embeddings, final LayerNorm:
// what ZeRO 3 gathers once per step).
double stage_params(const Ctx& x, const StagePlan& s, size_t k, size_t stages);
double block_params(const Ctx& x, int tp);
double kept_params(const Ctx& x, const StagePlan& s, size_t k, size_t stages);
// Members of the group of plan ranks holding (stage k, tp rank j) in every replica.
std::vector<int> dp_group(const Plan& p, int k, int j);
// The hierarchical split of a dp group, as comm::make_wan_group makes it: L ranks in each of S
// sites (equal counts), else none (S = 0).
struct Hier {
  int S = 0, L = 0;
  Link local, cross;
};
Hier hierarchy_of(const Ctx& x, const std::vector<int>& group);

}  // namespace slm::planner::cost
