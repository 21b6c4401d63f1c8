// parallel/tensor/mappings.h: tensor-parallel collectives as autograd functions (Megatron's f/g, and
// sequence parallelism's gathers and scatters of token rows).
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

// Sequence parallelism (Megatron's): between the linears the activations are split by token. Of
// the (N, C) token rows of a (B, T, C) activation (N = B·T), tp rank r holds rows
// [r·N/tp, (r+1)·N/tp): one contiguous piece, so the collectives below move whole tensors.
// REQUIRES: tp divides N. Local pieces are (N/tp, C); whole ones come back as (N, C).
// Before a column-parallel linear (instead of f): forward all-gather, backward reduce-scatter.
at::Tensor gather_rows(const at::Tensor& local, const comm::Group& tp);
// After a row-parallel linear (instead of g): forward reduce-scatter, backward all-gather.
at::Tensor reduce_scatter_rows(const at::Tensor& partial, const comm::Group& tp);
// A whole activation, equal on every tp rank, into the split: forward this rank's rows, backward
// all-gather (the gradient leaves whole and equal on every rank).
at::Tensor split_rows(const at::Tensor& whole, const comm::Group& tp);
// The split back into a whole activation that goes on equal on every tp rank (a pipeline stage's
// output): forward all-gather, backward this rank's rows of the (equal) gradient.
at::Tensor gather_rows_whole(const at::Tensor& local, const comm::Group& tp);

// The two row collectives under these, outside autograd (for autograd functions of their own,
// sequence_parallel_linear.h): all tp ranks' pieces (..., C) as (N, C); this rank's (N/tp, C) rows
// of the sum over tp of (..., C).
at::Tensor all_gathered_rows(const at::Tensor& local, const comm::Group& tp);
at::Tensor reduce_scattered_rows(const at::Tensor& partial, const comm::Group& tp);

}  // namespace slm::parallel::tensor
