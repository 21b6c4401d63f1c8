// model/add_layer_norm.h: the residual add and the LayerNorm after it as one operation,
// s = r + d, y = layer_norm(s), as every GPT-2 block has twice. One kernel each way on CUDA tensors
// in a build with the own kernels (model/cuda/add_layer_norm.cu) and on a CPU with AVX-512
// (model/add_layer_norm_rows.h), y coming out in autocast's dtype where autocast is on (the next
// matmul's input: eager PyTorch writes fp32 and casts it in another pass); elsewhere ATen's add
// and layer_norm.
// Owns: add_layer_norm, add_layer_norm_fused (whether the CUDA kernel takes given tensors).
#pragma once
#include <ATen/core/Tensor.h>

#include <utility>

namespace slm::model {

// {s, y}: s = r + d (d undefined: s = r), y = layer_norm(s, {C}, w, b, eps); differentiable in r,
// d, w and b.
std::pair<at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                                 const at::Tensor& b, double eps = 1e-5);
// Whether add_layer_norm runs the CUDA kernel for these tensors.
bool add_layer_norm_fused(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w, const at::Tensor& b);

}  // namespace slm::model
