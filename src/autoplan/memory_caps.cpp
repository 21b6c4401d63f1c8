// autoplan/memory_caps.cpp: see memory_caps.h.
#include "autoplan/memory_caps.h"

#include <fmt/format.h>

#include "autoplan/inputs.h"
#include "comm/collectives.h"
#include "host/cuda_info.h"
#include "host/hardware.h"
#include "planner/cluster.h"
#include "util/error.h"

namespace slm::autoplan {

std::vector<parallel::MemoryCap> configured_memory_caps(const train::Config& cfg, const std::string& file, int n,
                                                        const std::vector<int>& job_ranks) {
  std::vector<parallel::MemoryCap> caps(static_cast<size_t>(n), {cfg.parallel.memory_cap_gb, "parallel.memory_cap_gb"});
  if (file.empty()) return caps;
  const planner::Cluster cl = load_cluster(file, "planner.cluster").cluster;
  if (job_ranks.empty() && cl.world() != n)
    throw UserError(fmt::format("planner.cluster: {} describes {} ranks, the job has {}", file, cl.world(), n));
  if (!job_ranks.empty() && cl.world() <= job_ranks.back())
    throw UserError(fmt::format("planner.cluster: {} describes {} ranks, fewer than the job's", file, cl.world()));
  for (int r = 0; r < n; ++r) {
    const int j = job_ranks.empty() ? r : job_ranks[static_cast<size_t>(r)];
    const planner::RankSpec& info = cl.ranks[static_cast<size_t>(j)];
    auto& cap = caps[static_cast<size_t>(r)];
    cap = parallel::tighter(
        cap, {info.memory_gb, fmt::format("site {}'s memory in {}", cl.sites[static_cast<size_t>(info.site)], file), true});
  }
  return caps;
}

std::vector<parallel::MemoryCap> rank_memory_caps(const train::Config& cfg, const comm::World& w, const std::string& device) {
  const int n = w.world.size;
  std::vector<parallel::MemoryCap> caps = configured_memory_caps(cfg, cfg.planner.cluster, n, w.job_ranks);
  // Every rank's GPU memory (0 on CPU ranks) and resident memory, so that every rank checks every
  // rank alike. On a GPU the runtime's own share (the CUDA context) is not counted.
  const double gib = 1024.0 * 1024 * 1024;
  std::vector<double> v(2 * static_cast<size_t>(n), 0.0);
  const size_t me = static_cast<size_t>(w.world.rank);
  if (device != "cpu") v[me] = host::cuda_info().memory_bytes / gib;
  else v[static_cast<size_t>(n) + me] = static_cast<double>(host::resident_memory_bytes()) / gib;
  v = comm::sum(v, w.world);
  for (int r = 0; r < n; ++r) {
    auto& cap = caps[static_cast<size_t>(r)];
    cap = parallel::tighter(cap, {v[static_cast<size_t>(r)], "its GPU's memory", true});
    if (cap.whole_device) cap.in_use_gb = v[static_cast<size_t>(n) + static_cast<size_t>(r)];
  }
  return caps;
}

}  // namespace slm::autoplan
