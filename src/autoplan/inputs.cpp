// autoplan/inputs.cpp: see inputs.h.
#include "autoplan/inputs.h"

#include <algorithm>
#include <fmt/format.h>

#include "autoplan/profile.h"
#include "host/hardware.h"
#include "host/runtime.h"
#include "planner/comm_cost.h"
#include "planner/devices.h"
#include "planner/search.h"
#include "train/precision.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::autoplan {

ClusterFile load_cluster(const std::string& path, const std::string& setting) {
  if (!path_exists(path))
    throw UserError(setting.empty() ? fmt::format("{}: no such file", path)
                                    : fmt::format("{}: {}: no such file", setting, path));
  ClusterFile f;
  f.spec = testbed::parse_testbed(read_file(path), path);
  f.cluster = planner::cluster_from_spec(f.spec, path);
  return f;
}

// The precision training would use on these devices: the config's, or for "auto" this machine's
// choice on CPU clusters and bf16 (fp16 without bf16 units) on GPUs.
std::string planning_precision(const train::Config& cfg, const planner::Cluster& c) {
  if (cfg.system.precision != "auto") return cfg.system.precision;
  const planner::DeviceSpec* d = planner::find_device(c.ranks[0].device);
  if (d && d->name != "cpu") return d->bf16_tflops > 0 ? "bf16" : "fp16";
  std::string why;
  const int64_t T = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  return train::resolve_precision("auto", "cpu", {cfg.model, cfg.batch.micro_batch, T}, &why);
}

PlanningInputs load_planning_inputs(const train::Config& cfg, const std::string& cluster, const std::string& topology,
                                    const std::string& profile) {
  PlanningInputs p;
  if (cluster.empty()) throw UserError("plan: --cluster FILE is required (the testbed TOML with devices)");
  ClusterFile f = load_cluster(cluster);
  p.spec = std::move(f.spec);
  p.cluster = std::move(f.cluster);
  if (!topology.empty()) {
    if (!path_exists(topology)) throw UserError(fmt::format("{}: no such file", topology));
    planner::apply_topology(p.cluster, read_file(topology), topology);
  }
  p.seq_len = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  if (!profile.empty()) {
    if (!path_exists(profile)) throw UserError(fmt::format("{}: no such file", profile));
    p.profile = planner::parse_profile(read_file(profile), profile);
  }
  // With "auto", a profile's precision is what `slm profile` measured the ranks to pick (it probes
  // at its largest micro-batch, so its choice can differ from a probe at the config's).
  p.precision = cfg.system.precision == "auto" && !profile.empty() ? p.profile.shape.precision
                                                                  : planning_precision(cfg, p.cluster);
  const planner::ProfileShape shape = profile_shape(cfg.model, p.seq_len, p.precision);
  if (!profile.empty()) {
    planner::check_profile(p.profile, shape, p.cluster.world(), profile);
    p.profile_from = profile + " (" + p.profile.ranks[0].source + ")";
  } else {
    // The device table; CPU ranks from this machine's one-core GEMM peak (measured once, cached).
    host::configure_cpu_threads(1, 1);
    const double core = host::describe_device("cpu", p.precision == "bf16" ? "bf16" : "fp32", 1, 0, 0).peak_flops;
    std::vector<int64_t> sizes;
    for (int64_t b = 1; b <= std::max<int64_t>(cfg.batch.batch_size, 1); b *= 2) sizes.push_back(b);
    p.profile = planner::profile_from_devices(p.cluster, shape, core, sizes);
    p.profile_from = fmt::format("device table (assumed; CPU core peak {:.0f} GFLOP/s measured) - `slm profile` measures",
                                 core / 1e9);
  }
  return p;
}

planner::Candidate candidate_of(const parallel::Plan& plan, const train::Config& cfg, const planner::Cluster& c) {
  planner::Candidate k;
  k.plan = plan;
  k.ranks = plan.job_ranks;  // the plan's ranks in the cluster (job_ranks, else all)
  if (k.ranks.empty())
    for (int r = 0; r < c.world(); ++r) k.ranks.push_back(r);
  k.ranks_per_site = cfg.dist.wan.ranks_per_site;
  k.compress = cfg.dist.wan.compress;
  k.zero_site = cfg.parallel.zero_scope == "site";
  k.recompute = cfg.model.recompute;
  k.sequence_parallel = cfg.parallel.sequence_parallel;
  if (cfg.sync.mode == "diloco") k.diloco_steps = cfg.sync.inner_steps;  // (the predicted codec is int8)
  // dist.channels = 0: as the runtime resolves it (comm/hierarchy.h resolve_wan): from the slowest
  // link when a topology is known (a file, or the probe at start), else one connection.
  std::vector<int> g;
  for (int r = 0; r < plan.dp; ++r) g.push_back(k.ranks.at(static_cast<size_t>(parallel::rank_at(plan, 0, r, 0))));
  const planner::RingLinks ring = planner::ring_links(c, g);
  k.channels = cfg.dist.wan.channels > 0 ? static_cast<int>(cfg.dist.wan.channels)
               : cfg.dist.wan.topology.empty() || !ring.crosses_sites ? 1
                                                                      : planner::channels_for(ring.slowest);
  return k;
}

}  // namespace slm::autoplan
