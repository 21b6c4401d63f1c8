// autoplan/inputs.h: what planning reads, loaded in one place: the cluster file (the testbed TOML
// with devices, planner/cluster.h), a probe's links (topology.json), the compute profile (a file
// from `slm profile`, else the device table), and the precision training would use there; and a
// plan as a planner candidate under a run's settings (to predict a plan that was not searched).
// Owns: ClusterFile, load_cluster, PlanningInputs, load_planning_inputs, planning_precision,
// candidate_of.
#pragma once
#include <string>

#include "parallel/plan.h"
#include "planner/cluster.h"
#include "planner/cost_model.h"
#include "testbed/spec.h"
#include "train/config.h"

namespace slm::autoplan {

struct ClusterFile {
  testbed::TestbedSpec spec;
  planner::Cluster cluster;
};
// The cluster file at `path`; `setting` names where it was given ("planner.cluster"; "" for a
// command's flag) in the one-line error for a missing file.
ClusterFile load_cluster(const std::string& path, const std::string& setting = "");

struct PlanningInputs {
  testbed::TestbedSpec spec;
  planner::Cluster cluster;
  planner::ComputeProfile profile;
  std::string profile_from, precision;
  int64_t seq_len = 0;
};
// `cluster` is required; `topology` and `profile` may be "".
PlanningInputs load_planning_inputs(const train::Config& cfg, const std::string& cluster, const std::string& topology,
                                    const std::string& profile);

// The precision training would use on these devices: the config's, or for "auto" this machine's
// choice on CPU clusters and bf16 (fp16 without bf16 units) on GPUs.
std::string planning_precision(const train::Config& cfg, const planner::Cluster& c);

// A plan with the run's [dist]/[parallel]/[model]/[sync] options as a planner candidate.
planner::Candidate candidate_of(const parallel::Plan& plan, const train::Config& cfg, const planner::Cluster& c);

}  // namespace slm::autoplan
