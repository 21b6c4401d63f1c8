// planner/plan_file.h: the file `slm plan auto` writes: the plan (parallel/plan.h TOML) plus a
// [set] table with the other settings the layout needs ([set.dist] ranks_per_site, compress,
// channels; [set.parallel] zero_scope; [set.model] recompute), so that one file reproduces the
// layout: `slm train --set parallel.plan=plan.toml` applies [set] before the command line's --set.
// Owns: Setting, candidate_settings (the one mapping of a candidate to a run's settings),
// plan_for_job, candidate_to_toml, validate (PlannerConfig). Pure.
#pragma once
#include <string>
#include <vector>

#include "planner/cluster.h"
#include "planner/cost_model.h"

namespace slm::planner {

// One setting of a run's config, named as `--set section.key=value` names it; value in TOML.
struct Setting {
  std::string section, key, value;
};
// What a candidate needs beyond its plan: the plan file's [set] table and parallel.plan = "auto"
// (autoplan/auto_plan.h) both apply these, in this order.
std::vector<Setting> candidate_settings(const Candidate& c);
// c.plan, with job_ranks = c.ranks when c uses some of the cluster's `world` ranks, rank 0 among
// them (the others then exit at start; without rank 0, only the used ranks can be started).
parallel::Plan plan_for_job(const Candidate& c, int world);
// plan_for_job's plan and the [set] table; `header` lines are written as comments first (the
// prediction, the ranks to start).
std::string candidate_to_toml(const Candidate& c, int world, const std::string& header);

}  // namespace slm::planner
