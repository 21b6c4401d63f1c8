// parallel/apply.cpp: see apply.h.
#include "parallel/apply.h"

#include <torch/torch.h>

#include "comm/collectives.h"
#include "parallel/tensor/model.h"

namespace slm::parallel {

Applied apply_parallel(model::GPT2& m, const Plan& plan, ParallelConfig pc, const SyncConfig& sync, int64_t n_layer,
                       const comm::ProcessGroups& g) {
  Applied a;
  tensor::apply_tensor_parallel(m, g.tp);
  pc.zero = plan.zero;
  a.dp = apply_data_parallel(m, pc, g.dp, g.tp);
  {
    torch::NoGradGuard no_grad;  // every rank starts from rank 0's parameters
    at::Tensor flat = param_shard(*a.dp);
    if (zero_stage(*a.dp) == 0) comm::broadcast(flat, 0, g.dp);
  }
  if (sync.mode != "diloco") return a;
  if (zero_stage(*a.dp) == 3)
    a.outer = make_sharded_outer_sync(sync, param_shard(*a.dp), segments(*a.dp), layout(*a.dp), n_layer, g.dp, g.outer);
  else
    a.outer = make_outer_sync(sync, full_params(*a.dp), layout(*a.dp), n_layer, g.dp, g.outer);
  return a;
}

}  // namespace slm::parallel
