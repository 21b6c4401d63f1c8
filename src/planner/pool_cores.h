// planner/pool_cores.h: a machine's CPU pools held to the cores it has. A pool's cores (its ranks
// / their mean solo speed-up x a rank's cores alone; planner/profile.h) come from two timings a
// minute apart on a VM whose speed moves minute to minute: on the AMX Xeon VM's testbed (4 ranks
// of 1 thread on 2 CPUs, one pool) the pool's mean speed-up came out 1.83-3.03 over 7 profiles,
// so 1.3-2.2 cores, and data parallelism, whose CPU floor divides the bytes' CPU by those cores,
// was predicted +3..+45%. The machine says how many there are: where every rank on it computes on
// the CPU with one thread, its pools together have, all busy, no more than its logical CPUs and
// no fewer than its physical cores (hyperthreads), and a pool no more than its ranks or its
// quota. fit_pool_cores scales the pools' measured cores into those bounds, keeping their
// proportions; re-predicted from those 7 profiles at 2 cores, the 28 measured layouts' median
// error went from 19% to 13%, the worst from 45% to 33%.
// Owns CpuFacts and fit_pool_cores. Pure: no torch.
#pragma once
#include <string>
#include <vector>

#include "planner/profile.h"

namespace slm::planner {

// What one rank saw of its machine's CPUs (`slm profile` gathers them from every rank).
struct CpuFacts {
  int cpus = 0;            // logical CPUs it may run on (its affinity); 0 = unknown
  int cores = 0;           // physical cores among them
  int threads = 0;         // its compute threads on the CPU; 0 where it computes on a GPU
  double quota_cores = 0;  // its CPU quota (its pool's cgroup) in cores; 0 = none
};

// Scales the solo speed-ups of each machine's pools (ranks by RankProfile::machine, pools by
// host) so that their cores lie within the machine's bounds; a machine is left as measured unless
// every rank on it runs on the CPU with one thread and its facts are known. The ranks of a pool
// it changes all get the pool's speed-up (at least 1; the cost model reads a pool's mean).
// Returns one line per machine it changed, e.g. "machine 0 (2 CPUs, 2 cores): 4 ranks in 1 pool
// on 1.32 cores as measured, fitted to 2.00".
std::vector<std::string> fit_pool_cores(std::vector<RankProfile>& ranks, const std::vector<CpuFacts>& facts);

}  // namespace slm::planner
