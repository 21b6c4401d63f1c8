// parallel/apply.h: composition in one place: a plan, this rank's model chunks and the process
// groups become the parallel wrappers, always in this order:
//  1. tensor parallelism: the blocks' tensors replaced by this rank's slices (tensor/model.h);
//  2. data parallelism / ZeRO over the dp group: flat buffers, gradient reduction, the shard
//     (data_parallel.h); every rank starts from rank 0's parameters;
//  3. DiLoCo's outer sync across sites (sync.mode = "diloco", diloco.h), over the shard under ZeRO-3.
// The pipeline stage (which chunks this rank holds) is cut before, from the plan (pipeline/stage.h);
// the run's header says what each layer did, one line each (train/loop.cpp).
// Owns: Applied, apply_parallel.
#pragma once
#include <memory>

#include "comm/mesh.h"
#include "model/gpt2.h"
#include "parallel/config.h"
#include "parallel/data_parallel.h"
#include "parallel/diloco.h"
#include "parallel/plan.h"
#include "parallel/sync_config.h"

namespace slm::parallel {

struct Applied {
  std::shared_ptr<DataParallel> dp;
  std::shared_ptr<OuterSync> outer;  // null unless sync.mode = "diloco"
};

// `m` holds this rank's chunks, on its device. Collective over the groups.
Applied apply_parallel(model::GPT2& m, const Plan& plan, ParallelConfig pc, const SyncConfig& sync, int64_t n_layer,
                       const comm::ProcessGroups& g);

}  // namespace slm::parallel
