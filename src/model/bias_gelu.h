// model/bias_gelu.h: GPT-2's MLP activation with the fc layer's bias, gelu_tanh(x + b), as one
// operation. On CUDA tensors in a build with the own kernels it is one kernel each way
// (model/cuda/bias_gelu.cu; the matmul runs without its bias, the backward sums the bias gradient
// in the pass that writes the input gradient); elsewhere the block keeps linear-with-bias and
// gelu_tanh (model/gelu_tanh.h), unchanged.
// Owns: fc_gelu (what the block calls), bias_gelu, bias_gelu_fused.
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model {

// gelu_tanh(linear(h, w, b)): the fused form where bias_gelu_fused says so, else the ATen form.
at::Tensor fc_gelu(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b);
// gelu_tanh(x + b) for x (..., N), b (N) through the CUDA kernels; differentiable in x and b.
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& b);
// Whether the kernels take x (a CUDA tensor, float/bf16/fp16) and b (fp32, N, on its device).
bool bias_gelu_fused(const at::Tensor& x, const at::Tensor& b);

}  // namespace slm::model
