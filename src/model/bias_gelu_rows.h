// model/bias_gelu_rows.h: the MLP's bias + GELU (model/bias_gelu.h) on the CPU, with AVX-512 (fp32,
// bf16) or AVX2 (fp32; model/cpu_rows.h), one pass each way over the fc matmul's output taken
// without its bias. Forward: y = gelu_tanh(x + b)
// (LibTorch's addmm first copies the bias into every row of its output). Backward: gx = gy
// gelu'(x + b) and, from the same registers, b's gradient: the column sums of gx as rounded to its
// dtype, as eager's sum of the bias gradient sees it (it reads gx once more), summed per block of
// rows and the blocks then added in order: the same bits on any number of threads. The GPU's
// counterpart: model/cuda/bias_gelu.cu.
// Owns: bias_gelu_rows_take, bias_gelu_rows_take_bias, bias_gelu_rows_forward, bias_gelu_rows_backward.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

namespace slm::model {

// Whether the kernels take these on this CPU: x a contiguous CPU tensor (..., N), N >= 1, of a
// dtype cpu_rows_take takes (fp32 and bf16 with AVX-512, fp32 with AVX2), and b a contiguous fp32
// CPU vector of N.
bool bias_gelu_rows_take(const at::Tensor& x, const at::Tensor& b);
// Whether they run on this CPU and take b as the bias of n columns (what is asked of x aside).
bool bias_gelu_rows_take_bias(const at::Tensor& b, int64_t n);

// gelu_tanh(x + b) in x's dtype, for tensors bias_gelu_rows_take takes.
at::Tensor bias_gelu_rows_forward(const at::Tensor& x, const at::Tensor& b);

// {gx (x's dtype and shape), db (fp32, N)} from y's gradient gy (shaped like x; another dtype is
// converted to x's).
std::vector<at::Tensor> bias_gelu_rows_backward(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& b);

}  // namespace slm::model
