// planner/pipeline_pass.h: the pipeline part of a step in the cost model (planner/cost_model.h):
// every replica's schedule simulated from its stages' costs (parallel/pipeline/schedule.h; where
// ranks time-share cores all replicas together, planner/core_sharing.h), the tied embedding between
// the last and the first stage, the gradient norm's sums and the step's end across the pipeline.
// Owns PipelinePass, simulate_replicas, tied_embedding_s, zero_norm_s, StepEnd, step_end.
// Internal to the cost model. Pure: no torch, no c10d.
#pragma once
#include "planner/cost_context.h"

namespace slm::planner::cost {

// The pipeline part of one step: every replica's schedule simulated (replicas that cost the same
// once; all together where ranks share cores, planner/core_sharing.h).
struct PipelinePass {
  std::vector<double> finish, last_bwd;  // per pipeline rank: schedule end, last micro-batch's backward
  double makespan = 0, bubble = 0, cross_bytes = 0;
};
// `rep_of`: each replica's representative (representative_of); `start`: each pipeline rank's start.
PipelinePass simulate_replicas(const Ctx& x, const std::vector<int>& rep_of, const std::vector<double>& start);

// The tied embedding's exchange (s); adds the bytes it moves across sites to *cross_bytes.
double tied_embedding_s(const Ctx& x, double* cross_bytes);
// The gradient norm's blocking sum over ZeRO's dp group (s).
double zero_norm_s(const Ctx& x);

// The step's end across the pipeline (parallel/pipeline/executor.cpp): each pipeline rank sends its
// number of the norm to the others into receives posted at the start, so the rank whose gradients
// are done last (schedule end + exposed reduction) waits only for numbers still in flight (one link
// latency after each other rank's), then does its tail. A rank that waits longer than the first
// pipeline rank takes to end its step begins the next step (and posts its first receives) that much
// later: `pass` is simulated again with those starts. `end`: the longest step of a rank from its own
// start; `wait`: the norm's wait of the rank done last.
struct StepEnd {
  double end = 0, wait = 0;
};
StepEnd step_end(const Ctx& x, const std::vector<int>& rep, PipelinePass& pass, const std::vector<double>& reduce,
                 const std::vector<double>& tail);

}  // namespace slm::planner::cost
