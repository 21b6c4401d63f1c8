// planner/core_sharing.h: the pipeline schedules of all replicas run together where ranks
// time-share a machine's cores (CPU ranks; a testbed site's ranks). Owns SharedPool, SharedReplica,
// simulate_sharing. Pure: no torch, no c10d.
// The profile times a rank's compute with every rank of its machine busy; a rank runs faster while
// others wait in a bubble, up to its speed alone: with k of a pool's n ranks computing, each runs at
// min(solo speed-up, n / k) times its profiled speed (processor sharing). An event-driven run of
// parallel/pipeline/schedule.h's action lists (the same dependencies and Gloo rendezvous as
// parallel::pipeline::simulate) with those rates. A factor per machine from the mean busy ranks
// (the previous model) ran every action at the mean rate, as if the cores idle in one stage's
// warm-up served another stage: a 4-stage 1F1B on 4 ranks sharing 2 cores came out 10-18% fast.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace slm::planner {

struct SharedPool {
  double ranks = 1;    // ranks of the machine the profile timed all busy
  double speedup = 1;  // one rank alone against all busy (1: no sharing)
};

// One replica's pipeline: its stage costs at the profiled (all busy) speed, the part of each that
// is CPU work and speeds up when cores free (the rest, e.g. waiting on a link, does not), and per
// pipeline rank the pools its ranks compute in: (pool index, ranks of that rank's tp group there).
struct SharedReplica {
  parallel::pipeline::StageCosts time;
  std::vector<double> cpu_fwd, cpu_bwd;                    // per virtual stage, <= time.fwd / time.bwd
  std::vector<std::vector<std::pair<int, double>>> pools;  // per pipeline rank; empty: a rank of its own
};

struct SharedSimulation {
  bool deadlock = false;
  std::string message;
  double makespan = 0;
  std::vector<std::vector<double>> finish, busy;  // [replica][pipeline rank]: last action's end, time occupied
                                                  // (zeros where a deadlock stopped the run)
};

SharedSimulation simulate_sharing(const std::vector<std::vector<parallel::pipeline::Action>>& per_rank, int chunks,
                                  const std::vector<SharedReplica>& replicas, const std::vector<SharedPool>& pools);

}  // namespace slm::planner
