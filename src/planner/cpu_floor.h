// planner/cpu_floor.h: where ranks time-share a machine's cores (CPU ranks, testbed sites), the step
// in the cost model (planner/cost_model.h) takes at least their CPU work over those cores: compute,
// optimizer and the CPU of every byte they move, per pool and per machine. Owns cpu_bound_s.
// Internal to the cost model. Pure: no torch, no c10d.
#pragma once
#include "planner/cost_context.h"

namespace slm::planner::cost {

// The floor (s); 0 where no rank shares cores or none measured the CPU of moving bytes.
double cpu_bound_s(const Ctx& x, double optimizer_s);

}  // namespace slm::planner::cost
