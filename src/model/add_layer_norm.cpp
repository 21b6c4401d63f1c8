// model/add_layer_norm.cpp: see add_layer_norm.h.
#include "model/add_layer_norm.h"

#include <torch/torch.h>

#include "model/own_cuda_kernels.h"
#include "util/torch_compat.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/kernels.h"
#include "model/cuda/ops.h"
#endif

namespace slm::model {
namespace {

#ifdef SLM_HAVE_CUDA_KERNELS
// Saves s, mean, rstd and w; the gradient of s is that of r and of d alike.
struct AddLayerNormFn : torch::autograd::Function<AddLayerNormFn> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& r,
                                                const at::Tensor& d, const at::Tensor& w, const at::Tensor& b,
                                                double eps) {
    const at::ScalarType y_type =
        compat::autocast_enabled(at::kCUDA) ? compat::autocast_dtype(at::kCUDA) : r.scalar_type();
    std::vector<at::Tensor> out = cuda::add_layer_norm_forward(r, d, w, b, eps, y_type);
    ctx->save_for_backward({out[0], out[2], out[3], w});
    ctx->saved_data["d_type"] = static_cast<int64_t>(d.scalar_type());
    return {out[0], out[1]};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& gs = grads[0];
    at::Tensor gy = grads[1].defined() ? grads[1] : at::zeros_like(saved[0]);
    const auto d_type = static_cast<at::ScalarType>(ctx->saved_data["d_type"].toInt());
    std::vector<at::Tensor> g = cuda::add_layer_norm_backward(gy, gs, saved[0], saved[1], saved[2], saved[3], d_type);
    return {g[0], g[3], g[1], g[2], at::Tensor()};
  }
};
#endif

}  // namespace

bool add_layer_norm_fused(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w, const at::Tensor& b) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (!own_cuda_kernels() || !d.defined() || !cuda::kernels_take(r) || !cuda::kernels_take(d) || r.sizes() != d.sizes() ||
      r.dim() < 1)
    return false;
  const int64_t C = r.size(-1);  // the backward holds a lane's columns in registers: up to kAddLayerNormMaxC
  auto vector_of_c = [C](const at::Tensor& v) {
    return v.is_cuda() && v.scalar_type() == at::kFloat && v.is_contiguous() && v.numel() == C;
  };
  return C >= 1 && C <= cuda::kAddLayerNormMaxC && vector_of_c(w) && vector_of_c(b);
#else
  (void)r, (void)d, (void)w, (void)b;
  return false;
#endif
}

std::pair<at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                                 const at::Tensor& b, double eps) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (add_layer_norm_fused(r, d, w, b)) {
    torch::autograd::variable_list out = AddLayerNormFn::apply(r, d, w, b, eps);
    return {out[0], out[1]};
  }
#endif
  at::Tensor s = d.defined() ? r + d : r;
  return {s, at::layer_norm(s, {s.size(-1)}, w, b, eps)};
}

}  // namespace slm::model
