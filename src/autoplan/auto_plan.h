// autoplan/auto_plan.h: `parallel.plan = "auto"`: at the start of training, measure the links (the
// quick probe) and every rank's compute (autoplan/profile.h, cached), describe the cluster (the
// [planner] cluster file, or sites from the probe), search (planner/search.h) and set the run up
// with the best layout. Every rank searches the same inputs, so every rank picks the same plan.
// Owns: AutoPlan, plan_at_start, search_options. May leave sites out (never rank 0's, which hosts the rendezvous
// store) unless planner.all_ranks; the caller lets those ranks go.
#pragma once
#include <string>

#include "comm/probe.h"
#include "comm/world.h"
#include "parallel/plan.h"
#include "planner/cost_model.h"
#include "planner/search.h"
#include "train/config.h"

namespace slm::autoplan {

struct AutoPlan {
  planner::Candidate chosen;
  parallel::Plan plan;         // chosen.plan with job_ranks when it leaves ranks out
  planner::Prediction predicted;
  int64_t evaluated = 0;       // layouts predicted
  double search_s = 0, profile_s = 0;
  std::string profile_source;  // "measured" | "cached" | the file
  std::string toml;            // the plan file with its [set] table (written to the run folder)
  std::string left_out;        // "" when every rank is used, else which ranks are left out and why
};

// The search's options from the configuration's [planner], [sync] and [batch] sections (what
// `slm plan auto` starts from before its flags).
planner::SearchOptions search_options(const train::Config& cfg);

// Collective over w.world. Sets cfg's parallel.zero, zero_scope, dist ranks_per_site / compress /
// channels and model.recompute to the chosen layout's; `precision` is the run's.
AutoPlan plan_at_start(train::Config& cfg, comm::World& w, const comm::ProbeResult& probe, const std::string& device,
                       const std::string& precision, int64_t seq_len);

}  // namespace slm::autoplan
