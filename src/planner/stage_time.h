// planner/stage_time.h: one virtual stage's forward and backward per micro-batch, as the cost model
// (planner/cost_model.h) takes them: the profile's compute (blocks, embedding, head; a forward
// again in the backward where the blocks rerun), tensor parallelism's all-reduces (as the link and
// the shared cores allow, or as the profile timed a tp pair), ZeRO-3's per-block gathers and
// reductions. Owns StageTime, stage_time. Internal to the cost model. Pure: no torch, no c10d.
#pragma once
#include "planner/cost_context.h"

namespace slm::planner::cost {

// Forward and backward time of virtual stage k for replica `rep` (its slowest tp rank), with the
// tp all-reduces and, for ZeRO-3, the per-block parameter gathers and gradient reductions.
struct StageTime {
  double fwd = 0, bwd = 0, cross_bytes = 0;
  double compute_fwd = 0, compute_bwd = 0;  // the compute share of fwd and bwd (cores can speed it up)
  double cpu_fwd = 0, cpu_bwd = 0;          // communication that is CPU work on shared cores (the same)
  double shared_fwd = -1, shared_bwd = -1;  // what speeds up when cores free, where measured (a tp
                                            // pair's blocks); -1: compute + cpu
};

// Stage k of replica `rep` at micro-batch b: its compute, then tp's and ZeRO-3's communication.
StageTime stage_time(const Ctx& x, int k, int rep, double b);

}  // namespace slm::planner::cost
