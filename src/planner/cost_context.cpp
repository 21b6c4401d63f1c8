// planner/cost_context.cpp: see cost_context.h.
#include "planner/cost_context.h"

#include <numeric>

namespace slm::planner::cost {

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

Ctx make_ctx(const Candidate& c, const CostInputs& in) {
  return Ctx{c, in, *in.cluster, static_cast<double>(in.model.n_embd), static_cast<double>(in.seq_len),
             static_cast<double>(in.model.vocab_padded), {}, {}, {}};
}

double block_params(const Ctx& x, int tp) {
  const double t = tp, C = x.C;
  return 12 * C * C / t + 7 * C / t + 6 * C;
}

double kept_params(const Ctx& x, const StagePlan& s, size_t k, size_t stages) {
  double n = 0;
  if (k == 0) n += x.V * x.C / s.tp + static_cast<double>(x.in.model.block_size) * x.C;
  if (k + 1 == stages) n += 2 * x.C;
  return n;
}

double stage_params(const Ctx& x, const StagePlan& s, size_t k, size_t stages) {
  return static_cast<double>(s.end - s.first) * block_params(x, s.tp) + kept_params(x, s, k, stages);
}

std::vector<int> dp_group(const Plan& p, int k, int j) {
  std::vector<int> g;
  for (int r = 0; r < p.dp; ++r) g.push_back(parallel::rank_at(p, k, r, j));
  return g;
}

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

}  // namespace slm::planner::cost
