// planner/pipeline_pass.cpp: see pipeline_pass.h.
#include "planner/pipeline_pass.h"

#include <algorithm>

#include "parallel/pipeline/schedule.h"
#include "planner/stage_time.h"

namespace slm::planner::cost {
namespace {

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

}  // namespace

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

}  // namespace slm::planner::cost
