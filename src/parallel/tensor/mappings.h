// parallel/tensor/mappings.h: tensor-parallel collectives as autograd functions (Megatron's f/g).
// Each wrapper's comment names its forward and its backward. The group is passed by pointer and
// must outlive the backward pass.
#pragma once
#include <ATen/core/Tensor.h>

#include "comm/group.h"

namespace slm::parallel::tensor {

// f: forward identity, backward all-reduce(sum) over tp. Before a column-parallel linear.
at::Tensor copy_to_tp(const at::Tensor& x, const comm::Group& tp);
// g: forward all-reduce(sum) over tp, backward identity. After a row-parallel linear.
at::Tensor reduce_from_tp(const at::Tensor& x, const comm::Group& tp);

}  // namespace slm::parallel::tensor
