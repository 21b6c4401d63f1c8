// autoplan/memory_caps.h: each rank's memory limit for the estimate checked before training (mixed-
// memory clusters): the smallest of parallel.memory_cap_gb (for the estimate alone), its site's
// memory in the planner.cluster file and its GPU's memory as the driver reports it (for the
// estimate plus what the runtime already holds: on CPU its resident memory now, as the planner
// counts a profile's overhead_bytes); and the CPU ranks of one machine together within its memory
// (host/memory_limit.h: MemTotal or a cgroup's lower limit), so that a run that cannot fit stops
// with one line before it starts rather than the kernel killing it.
// Owns: configured_memory_caps, rank_memory_caps.
#pragma once
#include <string>
#include <vector>

#include "comm/world.h"
#include "parallel/plan.h"
#include "train/config.h"

namespace slm::autoplan {

// From the configuration and a cluster file ("" = none) alone, for `world` ranks; job_ranks as in
// comm::World (empty = rank r is the file's rank r). in_use_gb is left 0. UserError when the file is missing, bad, or
// describes another number of ranks.
std::vector<parallel::MemoryCap> configured_memory_caps(const train::Config& cfg, const std::string& cluster_file, int world,
                                                        const std::vector<int>& job_ranks);
// The above for cfg.planner.cluster, then every rank's GPU or, on CPU ranks, its machine's memory
// (MemoryCap::machine_*; the words `from` as this rank sees them). Collective over w.world (every rank learns every rank's GPU memory). Indexed by w.world's ranks
// (after a shrink_world, w.job_ranks maps them to the cluster file's).
std::vector<parallel::MemoryCap> rank_memory_caps(const train::Config& cfg, const comm::World& w, const std::string& device);

}  // namespace slm::autoplan
