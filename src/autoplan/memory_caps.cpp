// autoplan/memory_caps.cpp: see memory_caps.h.
#include "autoplan/memory_caps.h"

#include <fmt/format.h>
#include <functional>

#include "autoplan/inputs.h"
#include "comm/collectives.h"
#include "host/cuda_info.h"
#include "host/hardware.h"
#include "host/memory_limit.h"
#include "planner/cluster.h"
#include "util/error.h"
#include "util/hash.h"

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
  // Every rank's GPU memory (0 on CPU ranks), resident memory and, on CPU ranks, its machine's
  // memory and what shares it (hashed, exact in a double), so that every rank checks every rank
  // alike. On a GPU the runtime's own share (the CUDA context) is not counted.
  const double gib = 1024.0 * 1024 * 1024;
  constexpr size_t kEach = 4;
  std::vector<double> mine(kEach, 0.0);
  const host::MemoryLimit limit = device == "cpu" ? host::memory_limit() : host::MemoryLimit{};
  if (device != "cpu") {
    mine[0] = host::cuda_info().memory_bytes / gib;
  } else {
    mine[1] = static_cast<double>(host::resident_memory_bytes()) / gib;
    mine[2] = limit.bytes / gib;
    mine[3] = hash_number(limit.pool);
  }
  const std::vector<double> v = comm::gather(mine, w.world);
  for (size_t r = 0; r < static_cast<size_t>(n); ++r) {
    const double* x = v.data() + kEach * r;
    auto& cap = caps[r];
    cap = parallel::tighter(cap, {x[0], "its GPU's memory", true});
    if (cap.whole_device) cap.in_use_gb = x[1];
    if (x[2] <= 0) continue;  // a GPU rank, or its machine's memory unknown
    size_t first = 0;  // the first rank of the same pool names it
    while (v[kEach * first + 3] != x[3]) ++first;
    cap.machine_pool = static_cast<int>(first);
    cap.machine_gb = x[2], cap.resident_gb = x[1], cap.machine_from = limit.from;
  }
  return caps;
}

}  // namespace slm::autoplan
