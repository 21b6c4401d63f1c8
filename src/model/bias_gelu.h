// model/bias_gelu.h: GPT-2's MLP activation with the fc layer's bias, gelu_tanh(x + b), as one
// operation: the matmul runs without its bias, and one kernel each way adds the bias and applies
// the GELU, the backward summing the bias gradient in the pass that writes the input gradient. On
// CUDA tensors in a build with the own kernels (model/cuda/bias_gelu.cu) and on a CPU with AVX-512
// or AVX2 (model/bias_gelu_rows.h); elsewhere the block keeps linear-with-bias and gelu_tanh
// (model/gelu_tanh.h), unchanged.
// Owns: fc_gelu (what the block calls), bias_gelu, bias_gelu_fused.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>

namespace slm::model {

// A linear layer y = h w^T + b (b may be undefined), as at::linear or a tensor-parallel form of it.
using Linear = std::function<at::Tensor(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b)>;

// gelu_tanh(linear(h, w, b)): the fused form where bias_gelu_fused says so (the linear then runs
// without its bias), else the ATen form. `linear` defaults to at::linear.
at::Tensor fc_gelu(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b, const Linear& linear = {});
// gelu_tanh(x + b) for x (..., N), b (N) through the kernels; differentiable in x and b.
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& b);
// Whether the kernels take x and b (fp32, N, on x's device): x a contiguous CUDA tensor
// (float/bf16/fp16) with the own kernels on, or a contiguous CPU one of a dtype cpu_rows_take takes
// (model/cpu_rows.h: float/bf16 with AVX-512, float with AVX2).
bool bias_gelu_fused(const at::Tensor& x, const at::Tensor& b);

}  // namespace slm::model
