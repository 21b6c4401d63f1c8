// parallel/plan_groups.h: the process groups a plan needs, built once and passed down.
// Owns: make_plan_groups. For this rank's stage: tp = the ranks of its replica in that stage; dp =
// the ranks with its tp rank in every replica of that stage; pp = every rank with its own
// connections, for stage-to-stage messages. DiLoCo (plan.sync_ranks_per_site): dp = those of
// this rank's site only, outer = the ranks at this rank's place in every site (own connections:
// the outer sync travels while the site trains), site = every rank of its site (the pipeline's
// gradient norm; the world otherwise). Every rank walks all groups in one order (all tp
// groups, then all dp groups), joining its own, so that creation cannot deadlock.
#pragma once
#include "comm/mesh.h"
#include "comm/world.h"
#include "parallel/plan.h"

namespace slm::parallel {

// `wan`: how the data-parallel gradients cross slow links (the run's dist settings, comm/hierarchy.h).
comm::ProcessGroups make_plan_groups(comm::World& w, const Plan& p, const comm::WanOptions& wan);

}  // namespace slm::parallel
