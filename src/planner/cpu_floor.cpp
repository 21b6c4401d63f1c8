// planner/cpu_floor.cpp: see cpu_floor.h.
#include "planner/cpu_floor.h"

#include <algorithm>

#include "planner/stage_time.h"

namespace slm::planner::cost {
namespace {

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
  const double G = p.dp, params = stage_params(x, s, K, S), block = block_params(x, s.tp) * 4;
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
  if (p.dp > 1 && p.zero == 3) {  // per micro-batch each block gathered twice and reduced; the kept units once
    add(M * L * (2 * (G - 1) / G + 2 * (G - 1) / G) * block, dp_across);
    add(((G - 1) / G + 2 * (G - 1) / G) * 4 * kept_params(x, s, K, S), dp_across);
  }
  if (S > 1 && (K == 0 || K + 1 == S))
    add(x.V * x.C * 4 / t, x.site(parallel::rank_at(p, 0, rep, 0)) != x.site(parallel::rank_at(p, static_cast<int>(S) - 1, rep, 0)));
  return out;
}

}  // namespace

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

}  // namespace slm::planner::cost
