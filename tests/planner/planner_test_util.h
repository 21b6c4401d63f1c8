// tests/planner/planner_test_util.h: small synthetic clusters and profiles for planner tests.
#pragma once
#include <string>
#include <vector>

#include "planner/cost_model.h"

namespace slm::planner::test {

// sites[i] ranks in site i; inside links {alpha_in, beta_in}; every site pair {alpha_x, beta_x}.
inline Cluster make_cluster(const std::vector<int>& sites, Link inside, Link across, double memory_gb = 0) {
  Cluster c;
  for (size_t s = 0; s < sites.size(); ++s) {
    c.sites.push_back(std::string(1, static_cast<char>('a' + s)));
    for (int k = 0; k < sites[s]; ++k) c.ranks.push_back({static_cast<int>(s), "cpu", memory_gb, 1.0});
  }
  c.link.assign(sites.size(), std::vector<Link>(sites.size(), across));
  for (size_t s = 0; s < sites.size(); ++s) c.link[s][s] = inside;
  return c;
}

// Every rank: a block takes fwd_s per sequence forward and twice that backward (linear in the
// micro-batch), the head 2 block-forwards, embeddings nothing; `slow` scales rank r's times.
inline ComputeProfile make_profile(int world, double fwd_s, const std::vector<double>& slow = {}) {
  ComputeProfile p;
  p.shape = {64, 4, 128, 16, "fp32"};
  for (int r = 0; r < world; ++r) {
    const double f = fwd_s * (static_cast<size_t>(r) < slow.size() ? slow[static_cast<size_t>(r)] : 1.0);
    RankProfile rp;
    rp.device = "test";
    rp.micro_batch = {1, 8};
    rp.block_fwd_s = {f, 8 * f};
    rp.block_bwd_s = {2 * f, 16 * f};
    rp.embed_s = {0, 0};
    rp.head_fwd_s = {2 * f, 16 * f};
    rp.head_bwd_s = {4 * f, 32 * f};
    rp.optim_s_per_param = 1e-9;
    p.ranks.push_back(rp);
  }
  return p;
}

// Every rank of p time-sharing the cores of one machine (host 0, `ranks` of them), 2x faster alone,
// each measuring `comm_cpu` seconds of its CPU per byte it moves (0: not measured).
inline void share_one_pool(ComputeProfile& p, int ranks, double comm_cpu = 0) {
  for (RankProfile& r : p.ranks)
    r.host = 0, r.host_ranks = ranks, r.shares_cores = true, r.solo_speedup = 2, r.comm_cpu_s_per_byte = comm_cpu;
}

inline parallel::ModelShape make_model(int64_t n_layer) {
  parallel::ModelShape m;
  m.n_layer = n_layer, m.n_head = 4, m.n_embd = 64, m.vocab_padded = 128, m.block_size = 16;
  return m;
}

}  // namespace slm::planner::test
