// autoplan/memory_caps.h: each rank's memory limit for the estimate checked before training (mixed-
// memory clusters): the smallest of parallel.memory_cap_gb (for the estimate alone), its site's
// memory in the planner.cluster file and its GPU's memory as the driver reports it (for the
// estimate plus what the runtime already holds: on CPU its resident memory now, as the planner
// counts a profile's overhead_bytes).
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
// The above for cfg.planner.cluster, then every rank's GPU. Collective over w.world (every rank learns every rank's GPU memory). Indexed by w.world's ranks
// (after a shrink_world, w.job_ranks maps them to the cluster file's).
std::vector<parallel::MemoryCap> rank_memory_caps(const train::Config& cfg, const comm::World& w, const std::string& device);

}  // namespace slm::autoplan
