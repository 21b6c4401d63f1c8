// model/linear_bf16.h: the model's linear layer, y = x w^T + b. Under CPU bf16 autocast on a CPU
// with AVX512-BF16 it runs on model/gemm_bf16 with its own backward (dx = dy w in bf16,
// dw = dy^T x accumulated in fp32 straight into the fp32 weight's gradient, db = the column sums of
// dy); everywhere else it is at::linear.
#pragma once
#include <ATen/ATen.h>

namespace slm::model {

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {});

}  // namespace slm::model
