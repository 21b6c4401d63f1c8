// parallel/tensor/sequence_parallel_linear.h: a column-parallel linear under sequence parallelism
// that keeps only this rank's token rows for its backward (Megatron-LM's saving).
// Composed of gather_rows and at::linear, the linear would keep the all-gathered (N, C) input for
// its weight gradient: as large as plain tp's. This autograd function keeps its (N/tp, C) rows and
// gathers them again in backward: one more all-gather per linear, in exchange for the largest
// activations outside the split. Under autocast the rows are cast to the compute dtype before the
// gather (what the linear would have cast them to: the same numbers, and half the bytes moved).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "comm/group.h"

namespace slm::parallel::tensor {

// linear(all-gather(local), w, b) as (B, seq_len, out): local is this rank's (N/tp, C) token rows
// (mappings.h); w (out, C) and b (out, or undefined) this rank's slices. Differentiable in local,
// w and b; the input's gradient is reduce-scattered back to this rank's rows, in local's dtype.
// `tp` must outlive the backward pass.
at::Tensor sequence_parallel_linear(const at::Tensor& local, const at::Tensor& w, const at::Tensor& b, int64_t seq_len,
                                    const comm::Group& tp);

}  // namespace slm::parallel::tensor
