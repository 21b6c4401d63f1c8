// planner/rank_tail.h: what follows a pipeline rank's schedule in the cost model
// (planner/cost_model.h): the data-parallel reduction of its gradients (flat over Gloo's lanes, or
// hierarchical; bf16 across sites; at least its CPU where ranks share cores; under ZeRO 3 only the
// embeddings' and final LayerNorm's), the optimizer on its shard, ZeRO-1/2's all-gather of the
// updated shards (ZeRO 3: of those units, once per step) and DiLoCo's outer sync. Owns Reduce,
// RankTail, rank_tail. Internal to the cost model. Pure: no torch, no c10d.
#pragma once
#include "planner/cost_context.h"

namespace slm::planner::cost {

// Exposed time and bytes across sites of a reduction (or DiLoCo's sync).
struct Reduce {
  double exposed_s = 0, cross_bytes = 0;
};

// What follows pipeline rank r's schedule (its chunks' parameters): the data-parallel reduction of
// its gradients after its last backward ends at `last_bwd` (exposed), then the optimizer, ZeRO's
// all-gather of the updated shard and DiLoCo's outer sync (amortised).
struct RankTail {
  Reduce reduce, outer;
  double gather = 0, optim = 0;
  double after_s() const { return optim + gather + outer.exposed_s; }  // what follows the reduction
};
RankTail rank_tail(const Ctx& x, int r, double last_bwd);

}  // namespace slm::planner::cost
