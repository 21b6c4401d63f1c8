// model/add_layer_norm_rows.h: the residual add + LayerNorm (model/add_layer_norm.h) on the CPU,
// with AVX-512, one pass over each row each way. Forward: s = r + d and y = layer_norm(s), y
// written in bf16 under autocast (the next matmul's input). Backward: the sum's gradient gs plus
// the LayerNorm's input gradient, written in fp32 and in d's dtype at once, and w's and b's
// gradients summed per block of rows, the blocks then added in order (the same bits every run, on
// any number of threads). ATen's composition runs the add, the LayerNorm, the cast of the bf16
// delta to fp32, the cast of y to bf16 and, backward, the gradient's cast to bf16 as passes of their
// own over memory. The GPU's counterpart: model/cuda/add_layer_norm.cu.
// Owns: add_layer_norm_rows_take, add_layer_norm_rows_forward, add_layer_norm_rows_backward.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

namespace slm::model {

// Whether the kernels take these on this CPU (AVX-512 F, BW and VL): contiguous CPU tensors r (fp32)
// and d (fp32 or bf16; or undefined: s = r) of one shape (..., C), C >= 1, w and b contiguous fp32
// CPU vectors of C, and y_type fp32 or bf16.
bool add_layer_norm_rows_take(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w, const at::Tensor& b,
                              at::ScalarType y_type);

// {s (fp32), y (y_type), mean, rstd (rows, fp32)} for tensors add_layer_norm_rows_take takes.
std::vector<at::Tensor> add_layer_norm_rows_forward(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                                    const at::Tensor& b, double eps, at::ScalarType y_type);

// Its backward from gy (y's gradient, fp32 or bf16; another dtype is converted) and gs (s's, may be
// undefined: 0): {gx (fp32, s's shape; r's gradient), dw, db (fp32, C), gd (gx in d_type: d's)}.
std::vector<at::Tensor> add_layer_norm_rows_backward(const at::Tensor& gy, const at::Tensor& gs, const at::Tensor& s,
                                                     const at::Tensor& mean, const at::Tensor& rstd,
                                                     const at::Tensor& w, at::ScalarType d_type);

}  // namespace slm::model
