// autoplan/profile.h: measuring every rank's compute for the planner (`slm profile`, and
// `parallel.plan = "auto"` at the start of training). Owns ProfileRequest, profile_job (times a
// transformer block forward and backward, the embeddings, head + loss and the AdamW step on each
// rank's device, precision and thread count, at each micro-batch size, all ranks at once; then
// where ranks share cores each alone; its cache, ~/.cache/slmtrain/profile.json, keyed by device,
// rank of the machine, CPU quota, model shape and precision; kept only where the machine's ranks
// had its CPUs while they timed together, host/cpu_share.h) and profile_shape. Its parts: the
// timings (profile_timing.h), the CPU quota (cpu_quota.h), communication's CPU (comm_cpu.h), the
// tp-2 pairs (profile_tp2.h); the machine's pools are held to its cores by planner/pool_cores.h.
// The numbers go into planner::ComputeProfile (planner/profile.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/world.h"
#include "model/gpt2.h"
#include "planner/profile.h"

namespace slm::autoplan {

struct ProfileRequest {
  model::GPT2Config model;
  int64_t seq_len = 0;
  std::string device = "cpu", precision = "fp32";
  std::vector<int64_t> micro_batch;  // sizes to time, ascending
  int repeats = 3;                   // timed runs per size after one warm-up (the median counts)
  bool use_cache = true;
  int local_ranks = 1;               // ranks sharing this machine (part of the cache key)
  double min_sample_s = 0;           // each timing spans at least this long (repeating the work);
                                     // 0: profile_job takes two periods of a CPU quota if one applies
};

// Collective over w.world (every rank of the job): each rank times its compute with all ranks busy
// at once (as in training), then, where ranks share a machine's cores, each alone in turn (its
// solo_speedup); then the ranks of a machine in pairs time a block split over tp 2, all pairs at
// once and, sharing cores, as a pipeline's stages and each pair alone (RankProfile::tp2_*);
// returns every rank's profile, by
// rank, on every rank (device names cut to 80 characters). Measured again unless every rank finds
// its entry in the cache.
std::vector<planner::RankProfile> profile_job(const ProfileRequest& r, comm::World& w);
// The shape key of a profile for this model.
planner::ProfileShape profile_shape(const model::GPT2Config& m, int64_t seq_len, const std::string& precision);

}  // namespace slm::autoplan
