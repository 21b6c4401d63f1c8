// model/cuda/ops.h: the own CUDA kernels (model/cuda/kernels.h) as operations on CUDA tensors:
// shape and dtype checks, the current stream, errors as c10::Error. Compiled only in a
// CUDA-enabled build (SLM_HAVE_CUDA_KERNELS); callers guard their use with that macro.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

namespace slm::model::cuda {

// Whether `t` is a tensor the kernels take: a contiguous float, bf16 or fp16 CUDA tensor.
bool kernels_take(const at::Tensor& t);
// xent_rows (kernels.h) on a contiguous (rows, width) CUDA tensor; targets (rows) on its device.
// Returns the per-row losses (fp32).
at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, int64_t V, bool grad);

// add_layer_norm_forward (kernels.h) on contiguous CUDA tensors r, d (..., C) of one shape, w, b
// fp32 (C): returns {s (r's dtype), y (y_type), mean, rstd (rows, fp32)}.
std::vector<at::Tensor> add_layer_norm_forward(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                               const at::Tensor& b, double eps, at::ScalarType y_type);
// Its backward: returns {gx (s's dtype and shape), dw, db, gd (gx in d_type: written by the kernel
// where d_type is gy's and not s's, else converted)}; gs may be undefined (0).
std::vector<at::Tensor> add_layer_norm_backward(const at::Tensor& gy, const at::Tensor& gs, const at::Tensor& s,
                                                const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& w,
                                                at::ScalarType d_type);

// bias_gelu_forward (kernels.h) on a contiguous CUDA tensor x (..., N) and a contiguous fp32 CUDA
// vector b (N): gelu_tanh(x + b) in x's dtype.
at::Tensor bias_gelu_forward(const at::Tensor& x, const at::Tensor& b);
// Its backward: {gx (x's dtype and shape), db (fp32, N)}.
std::vector<at::Tensor> bias_gelu_backward(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& b);

}  // namespace slm::model::cuda
