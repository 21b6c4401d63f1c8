// model/cuda/ops.h: the own CUDA kernels (model/cuda/kernels.h) as operations on CUDA tensors:
// shape and dtype checks, the current stream, errors as c10::Error. Compiled only in a
// CUDA-enabled build (SLM_HAVE_CUDA_KERNELS); callers guard their use with that macro.
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model::cuda {

// Whether `t` is a tensor the kernels take: a contiguous float, bf16 or fp16 CUDA tensor.
bool kernels_take(const at::Tensor& t);
// xent_rows (kernels.h) on a contiguous (rows, width) CUDA tensor; targets (rows) on its device.
// Returns the per-row losses (fp32).
at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, int64_t V, bool grad);

}  // namespace slm::model::cuda
