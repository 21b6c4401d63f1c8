// autoplan/profile_tp2.h: `slm profile`'s timings of tensor parallelism as it runs: a block split
// over tp 2 by the ranks of a pool in pairs (RankProfile::tp2_*, planner/profile.h). Owns
// measure_tp2.
#pragma once
#include <vector>

#include "autoplan/profile.h"
#include "comm/world.h"
#include "planner/profile.h"

namespace slm::autoplan {

// RankProfile::tp2_*: this rank's pair (its pool's ranks paired in rank order) times a tp-2 block
// at every size with every pair busy, then (alone_too: some pool shares cores) a pool's pairs as a
// pipeline's stages (tp2_pipeline_s), then each pair alone in turn at every size. Collective over
// w.world; a rank without a partner only waits.
void measure_tp2(const ProfileRequest& r, comm::World& w, const std::vector<int>& host,
                 const std::vector<int>& index_in_host, bool alone_too, planner::RankProfile* mine);

}  // namespace slm::autoplan
