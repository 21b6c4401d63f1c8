// autoplan/auto_plan.cpp: see auto_plan.h.
#include "autoplan/auto_plan.h"

#include <chrono>
#include <fmt/format.h>

#include "autoplan/inputs.h"
#include "autoplan/memory_caps.h"
#include "autoplan/profile.h"
#include "host/runtime.h"
#include "planner/plan_file.h"
#include "planner/search.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::autoplan {

// Micro-batch sizes to time: 1, 2, 4, 8 and the configured one on CPUs (a sequence costs about
// the same there at any size, and large sizes take long to time); on GPUs every power of 2 up to
// the batch (at most 64), where larger micro-batches run faster per sequence (gpt2 on an H200:
// 4 x 16 took 0.184 s a step, 1 x 64 0.165 s) and the planner must see by how much.
static std::vector<int64_t> profile_sizes(int64_t batch_size, int64_t micro_batch, const std::string& device) {
  const int64_t top = device == "cpu" ? 8 : 64;
  std::vector<int64_t> s;
  for (int64_t b = 1; b <= std::min(batch_size, top); b *= 2) s.push_back(b);
  if (micro_batch > s.back() && micro_batch <= std::max<int64_t>(top, 32)) s.push_back(micro_batch);
  return s;
}

// The cluster the job runs on: planner.cluster with the links the probe measured, else the probe's
// links alone, else one local rank; every GPU's memory as its driver reports it, where the cluster
// file gives less or nothing: the plan must fit the devices it runs on (collective: every rank
// learns every rank's).
static planner::Cluster job_cluster(const train::Config& cfg, comm::World& w, const comm::ProbeResult& probe,
                                    const std::string& device) {
  const planner::PlannerConfig& pc = cfg.planner;
  const std::string probe_text = comm::probe_json(probe);
  planner::Cluster cluster;
  if (!pc.cluster.empty()) {
    cluster = load_cluster(pc.cluster, "planner.cluster").cluster;
    if (cluster.world() != w.world.size)
      throw UserError(fmt::format("planner.cluster: {} describes {} ranks, the job has {}", pc.cluster, cluster.world(),
                                  w.world.size));
    if (w.world.size > 1) planner::apply_topology(cluster, probe_text, "the probe at start");
  } else if (w.world.size > 1) {
    // Links below 5 ms RTT are one site (as the study's rule has it): a probe of loopback links
    // under load can split them at a 3x jump of a millisecond.
    cluster = planner::cluster_from_probe(probe_text, device == "cpu" ? "cpu" : "cuda", "the probe at start",
                                          comm::widest_class(probe).alpha_s < 2.5e-3);
  } else {
    cluster.sites = {"local"};
    cluster.ranks = {{0, device == "cpu" ? "cpu" : "cuda", 0, 0}};
    cluster.link = {{planner::Link{planner::kBaseAlpha, planner::kUnlimitedBps}}};
  }
  const std::vector<parallel::MemoryCap> caps = rank_memory_caps(cfg, w, device);
  for (size_t r = 0; r < caps.size(); ++r)
    if (caps[r].whole_device && caps[r].gb > 0) cluster.ranks[r].memory_gb = caps[r].gb;
  return cluster;
}

// Every rank's compute: planner.profile, or measured now on every rank at once (as they will
// train). Sets a.profile_source.
static planner::ComputeProfile job_profile(const train::Config& cfg, comm::World& w, const std::string& device,
                                           const std::string& precision, int64_t seq_len, AutoPlan& a) {
  const planner::PlannerConfig& pc = cfg.planner;
  const planner::ProfileShape shape = profile_shape(cfg.model, seq_len, precision);
  planner::ComputeProfile prof;
  if (!pc.profile.empty()) {
    if (!path_exists(pc.profile)) throw UserError(fmt::format("planner.profile: {}: no such file", pc.profile));
    prof = planner::parse_profile(read_file(pc.profile), pc.profile);
    planner::check_profile(prof, shape, w.world.size, pc.profile);
    a.profile_source = pc.profile;
    return prof;
  }
  host::configure_cpu_threads(cfg.system.threads, w.env.local_world);
  ProfileRequest req{cfg.model, seq_len, device, precision, profile_sizes(cfg.batch.batch_size, cfg.batch.micro_batch, device),
                     3, true, w.env.local_world};
  prof.shape = shape;
  prof.ranks = profile_job(req, w);
  planner::pool_compute(prof.ranks);  // as parse_profile does for a profile file
  a.profile_source = prof.ranks[0].source;
  return prof;
}

planner::SearchOptions search_options(const train::Config& cfg) {
  planner::SearchOptions o;
  o.objective = cfg.planner.objective, o.allow_lossy = cfg.planner.allow_lossy, o.subsets = !cfg.planner.all_ranks;
  o.diloco_steps = cfg.sync.inner_steps;
  o.batch_size = cfg.batch.batch_size, o.micro_batch = cfg.batch.micro_batch;
  return o;
}

// The best layout by planner.strategy: the search's (rank 0 kept), or the study heuristic's, which
// must keep rank 0 (and every rank where planner.all_ranks asks). Sets a.chosen, a.predicted,
// a.evaluated.
static void choose_layout(const train::Config& cfg, const planner::CostInputs& in, int world, AutoPlan& a) {
  const planner::PlannerConfig& pc = cfg.planner;
  planner::SearchOptions o = search_options(cfg);
  o.keep_rank = 0, o.top = 1;
  if (pc.strategy == "study-heuristic") {
    planner::Ranked h = planner::study_heuristic(in, o);
    if (h.c.ranks.at(0) != 0 || (pc.all_ranks && h.c.ranks.size() != static_cast<size_t>(world)))
      throw UserError(fmt::format("planner: the study heuristic uses {} of the {} ranks ({}), {}; start only those "
                                  "(slm plan auto --strategy study-heuristic says which)",
                                  h.c.ranks.size(), world, planner::sites_used(*in.cluster, h.c.ranks),
                                  pc.all_ranks ? "but planner.all_ranks is set" : "not rank 0's site"));
    a.chosen = h.c, a.predicted = h.p, a.evaluated = 1;
    return;
  }
  const planner::SearchResult r = planner::search_plans(in, o);
  a.chosen = r.top.at(0).c, a.predicted = r.top.at(0).p, a.evaluated = r.evaluated;
}

AutoPlan plan_at_start(train::Config& cfg, comm::World& w, const comm::ProbeResult& probe, const std::string& device,
                       const std::string& precision, int64_t seq_len) {
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  AutoPlan a;
  const planner::Cluster cluster = job_cluster(cfg, w, probe, device);
  auto t0 = Clock::now();
  const planner::ComputeProfile prof = job_profile(cfg, w, device, precision, seq_len, a);
  a.profile_s = since(t0);
  const planner::CostInputs in{&cluster, &prof, train::model_shape(cfg, precision), seq_len, cfg.parallel.bucket_mb,
                               cfg.parallel.memory_cap_gb, {}};
  t0 = Clock::now();
  choose_layout(cfg, in, w.world.size, a);
  a.search_s = since(t0);
  const planner::Candidate& c = a.chosen;
  if (c.ranks.size() < static_cast<size_t>(w.world.size))
    a.left_out = fmt::format("uses {} of the {} ranks (sites {}): leaving the others out is predicted faster{} "
                             "(planner.all_ranks = true uses every rank)",
                             c.ranks.size(), w.world.size, planner::sites_used(cluster, c.ranks),
                             cfg.planner.objective == "cost" ? " per dollar" : "");
  cfg.parallel.zero = c.plan.zero;
  std::vector<std::string> settings;  // as the plan file's [set] table has them
  for (const planner::Setting& s : planner::candidate_settings(c)) settings.push_back(s.section + "." + s.key + "=" + s.value);
  train::apply_settings(cfg, settings);
  a.plan = planner::plan_for_job(c, w.world.size);
  a.toml = planner::candidate_to_toml(
      c, w.world.size, fmt::format("chosen by parallel.plan = \"auto\" ({} layouts predicted); predicted {:.3f} s per step\n{}",
                     a.evaluated, a.predicted.step_s, planner::describe_candidate(c)));
  return a;
}

}  // namespace slm::autoplan
