// planner/rank_tail.cpp: see rank_tail.h.
#include "planner/rank_tail.h"

#include <algorithm>
#include <cmath>

namespace slm::planner::cost {
namespace {

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

// Gradient reduction of one stage's dp group after a backward of `bwd_s`: exposed time and bytes
// across sites. Buckets become ready evenly through the backward; a flat all-reduce of a bucket
// starts when it is ready and a lane is free: Gloo runs kGlooLanes collectives of a process group
// at once (its worker threads), each on its own window, sharing the link's rate; the
// hierarchical path sums in the site
// during backward but does its cross-site step and site all-gather after it (comm/hierarchy.cpp
// runs them when the reduction is waited for).
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

}  // namespace

RankTail rank_tail(const Ctx& x, int r, double last_bwd) {
  const Candidate& c = x.c;
  const Plan& p = c.plan;
  const StagePlan& s = p.stages[static_cast<size_t>(r)];
  double params = 0, kept = 0;
  for (int ck = 0; ck < p.virtual_stages; ++ck) {
    const size_t k = static_cast<size_t>(ck * p.pp + r);
    params += stage_params(x, p.stages[k], k, p.stages.size());
    kept += kept_params(x, p.stages[k], k, p.stages.size());
  }
  const std::vector<int> group = c.diloco_steps > 0 ? in_site(x, dp_group(p, r, 0)) : dp_group(p, r, 0);
  const double bytes = 4 * params;
  // What is reduced after the schedule and gathered after the update: everything (ZeRO 0-2), or
  // ZeRO 3's embeddings and final LayerNorm, reduced after the last backward and gathered once per
  // step (its blocks' gathers and reductions are in the stage times).
  const double tail = p.zero == 3 ? 4 * kept : bytes;
  RankTail t;
  bool overlap = p.zero < 3;
  for (int q : group) overlap = overlap && !x.prof(q).shares_cores;
  t.reduce = reduce_grads(x, group, tail, last_bwd, s.tp, overlap);
  const auto M = static_cast<double>(p.micro_batches);
  if (p.zero == 2) t.reduce.exposed_s *= M, t.reduce.cross_bytes *= M;  // ZeRO-2 reduces every micro-batch
  const Hier h = hierarchy_of(x, group);
  const int shards = p.zero >= 1 ? (c.zero_site && h.S > 0 ? h.L : static_cast<int>(group.size())) : 1;
  if (p.zero >= 1 && shards > 1) {
    std::vector<int> zg = group;
    if (c.zero_site && h.S > 0) zg.resize(static_cast<size_t>(h.L));  // the site's ranks
    const RingLinks ring = ring_links(x.cl, x.to_cluster(zg));
    t.gather = ring_all_gather_s(shards, x.ag_link(ring), tail, 1, ring.crosses_sites ? s.tp : 1,
                                 x.ag_hop(ring.slowest, ring.crosses_sites, tail));
    t.reduce.cross_bytes += ring.site_edges * (shards - 1.0) / shards * tail * s.tp;
  }
  for (int pr : s.ranks) t.optim = std::max(t.optim, params / shards * x.prof(pr).optim_s_per_param);
  if (c.diloco_steps > 0) t.outer = outer_sync(x, dp_group(p, r, 0), bytes, s.tp);
  return t;
}

}  // namespace slm::planner::cost
