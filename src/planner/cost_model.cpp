// planner/cost_model.cpp: see cost_model.h. The step's terms are in cost_context.h (what they
// read), stage_time.h (a stage per micro-batch), pipeline_pass.h (the schedules, the tied
// embedding, the step's end), rank_tail.h (the reduction, optimizer, gathers, outer sync after a
// rank's schedule) and cpu_floor.h (shared cores); here they are composed, with memory and cost.
#include "planner/cost_model.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <set>

#include "planner/cost_context.h"
#include "planner/cpu_floor.h"
#include "planner/pipeline_pass.h"
#include "planner/rank_tail.h"
#include "planner/stage_time.h"

namespace slm::planner {

using cost::Ctx;
using parallel::Plan;
using parallel::StagePlan;

double model_flops(const parallel::ModelShape& m, int64_t batch, int64_t seq_len) {
  const double B = static_cast<double>(batch), s = static_cast<double>(seq_len), h = static_cast<double>(m.n_embd);
  const double L = static_cast<double>(m.n_layer), V = static_cast<double>(m.vocab_padded);
  return (m.recompute ? 96 : 72) * B * s * h * h * L * (1 + s / (6 * h)) + 6 * B * s * h * V;
}

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The plan as parallel::estimate_memory counts it: ZeRO's shards inside a site with hybrid sharding
// and under DiLoCo.
Plan memory_plan(const Candidate& c) {
  Plan pm = c.plan;
  if (c.zero_site || c.diloco_steps > 0) pm.zero_ranks_per_site = c.ranks_per_site;  // DiLoCo: ZeRO inside the site
  if (c.diloco_steps > 0) pm.sync_ranks_per_site = c.ranks_per_site;
  return pm;
}
// The model as the candidate runs it: with its recomputation and sequence parallelism.
parallel::ModelShape run_model(const Candidate& c, const CostInputs& in) {
  parallel::ModelShape m = in.model;
  m.recompute = c.recompute, m.sequence_parallel = c.sequence_parallel;
  return m;
}
// Cluster rank r's memory cap in bytes: its own, or parallel.memory_cap_gb where smaller (0: none).
double cap_bytes(const CostInputs& in, int r) {
  double cap = in.cluster->ranks[static_cast<size_t>(r)].memory_gb * kGiB;
  if (in.memory_cap_gb > 0) cap = cap > 0 ? std::min(cap, in.memory_cap_gb * kGiB) : in.memory_cap_gb * kGiB;
  return cap;
}

// Memory per rank (the plan's estimate plus the runtime's own) against each rank's cap: the rank
// closest to (or most over) its cap.
void memory_per_rank(const Ctx& x, Prediction* out) {
  const Candidate& c = x.c;
  const Plan& p = c.plan;
  const Plan pm = memory_plan(c);
  const parallel::ModelShape m = run_model(c, x.in);
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
        const double cap = cap_bytes(x.in, cr);
        if (cap <= 0 || need - cap <= best_margin) continue;
        best_margin = need - cap;
        out->tightest_rank = cr, out->tightest_over_bytes = need - cap, out->tightest_cap_bytes = cap;
      }
    }
}

}  // namespace

// 1. The replicas' pipelines (where ranks share cores, at the speed their busy neighbours leave);
// 2. what follows each pipeline rank's schedule: the data-parallel reduction, the optimizer, ZeRO's
// all-gather, DiLoCo's sync; 3. the tied embedding; 4. the gradient norm and the step's end; then
// the floor of CPU work where ranks share cores, throughput, cost and memory.
Prediction predict(const Candidate& c, const CostInputs& in) {
  const Ctx x = cost::make_ctx(c, in);
  const Plan& p = c.plan;
  Prediction out;
  const std::vector<int> rep = representative_of(c, in);
  cost::PipelinePass pass = cost::simulate_replicas(x, rep, {});
  out.cross_site_bytes = pass.cross_bytes;
  std::vector<double> reduce, tail;  // per pipeline rank: the exposed reduction; what follows it
  for (int r = 0; r < p.pp; ++r) {
    const cost::RankTail t = cost::rank_tail(x, r, pass.last_bwd[static_cast<size_t>(r)]);
    out.cross_site_bytes += t.reduce.cross_bytes + t.outer.cross_bytes;
    out.outer_sync_s = std::max(out.outer_sync_s, t.outer.exposed_s);
    out.dp_comm_s = std::max(out.dp_comm_s, t.reduce.exposed_s);
    out.zero_gather_s = std::max(out.zero_gather_s, t.gather);
    out.optimizer_s = std::max(out.optimizer_s, t.optim);
    reduce.push_back(t.reduce.exposed_s), tail.push_back(t.after_s());
  }
  if (p.stages.size() > 1) out.tied_s = cost::tied_embedding_s(x, &out.cross_site_bytes);
  out.norm_s = cost::zero_norm_s(x);
  const cost::StepEnd e = cost::step_end(x, rep, pass, reduce, tail);
  out.pipeline_s = pass.makespan, out.bubble = pass.bubble;
  out.step_s = e.end + out.tied_s + out.norm_s;  // the tied embedding, ZeRO's sum
  out.norm_s += e.wait;
  out.cpu_bound_s = cost::cpu_bound_s(x, out.optimizer_s);
  out.step_s = std::max(out.step_s, out.cpu_bound_s);
  const double tokens = static_cast<double>(p.global_batch()) * x.T;
  out.tokens_per_s = tokens / out.step_s;
  out.tflops_per_device = model_flops(run_model(c, in), p.global_batch(), in.seq_len) / out.step_s / c.ranks.size() / 1e12;
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
  const Ctx x = cost::make_ctx(c, in);
  const cost::StageTime st = cost::stage_time(x, k, replica, static_cast<double>(c.plan.micro_batch[static_cast<size_t>(replica)]));
  return {st.fwd, st.bwd};
}

double stage_compute_s(const Candidate& c, const CostInputs& in, int k, int replica) {
  const StageSeconds s = stage_seconds(c, in, k, replica);
  return s.forward + s.backward;
}

double stage_memory_over(const Candidate& c, const CostInputs& in, int k) {
  const Plan& p = c.plan;
  const parallel::ModelShape m = run_model(c, in);
  const Plan pm = memory_plan(c);
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
      const double cap = cap_bytes(in, cr);
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
