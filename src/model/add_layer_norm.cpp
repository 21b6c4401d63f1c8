// model/add_layer_norm.cpp: see add_layer_norm.h.
#include "model/add_layer_norm.h"

#include <torch/torch.h>
#include <c10/util/Optional.h>

#include "model/add_layer_norm_rows.h"
#include "model/own_cuda_kernels.h"
#include "util/torch_compat.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/kernels.h"
#include "model/cuda/ops.h"
#endif

namespace slm::model {
namespace {

// y's dtype: autocast's where it is on for r's device (the next matmul's input), else r's own.
at::ScalarType y_type_of(const at::Tensor& r) {
  const at::DeviceType dev = r.device().type();
  return compat::autocast_enabled(dev) ? compat::autocast_dtype(dev) : r.scalar_type();
}

// The kernels of r's device: {s, y, mean, rstd} and, backward, {gx, dw, db, gd}.
std::vector<at::Tensor> forward_kernel(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                       const at::Tensor& b, double eps, at::ScalarType y_type) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (r.is_cuda()) return cuda::add_layer_norm_forward(r, d, w, b, eps, y_type);
#endif
  return add_layer_norm_rows_forward(r, d, w, b, eps, y_type);
}

std::vector<at::Tensor> backward_kernel(const at::Tensor& gy, const at::Tensor& gs, const at::Tensor& s,
                                        const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& w,
                                        at::ScalarType d_type) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (s.is_cuda()) return cuda::add_layer_norm_backward(gy, gs, s, mean, rstd, w, d_type);
#endif
  return add_layer_norm_rows_backward(gy, gs, s, mean, rstd, w, d_type);
}

// Saves s, mean, rstd and w; the gradient of s is that of r and of d alike. d may be absent on the
// CPU (s = r): an optional, since autograd takes no undefined tensor as an input.
struct AddLayerNormFn : torch::autograd::Function<AddLayerNormFn> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& r,
                                                const c10::optional<at::Tensor>& d_opt, const at::Tensor& w,
                                                const at::Tensor& b, double eps, int64_t y_type) {
    const at::Tensor d = d_opt.has_value() ? *d_opt : at::Tensor();
    std::vector<at::Tensor> out = forward_kernel(r, d, w, b, eps, static_cast<at::ScalarType>(y_type));
    ctx->save_for_backward({out[0], out[2], out[3], w});
    ctx->saved_data["d_type"] = d.defined() ? static_cast<int64_t>(d.scalar_type()) : int64_t{-1};
    return {out[0], out[1]};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& gs = grads[0];
    at::Tensor gy = grads[1].defined() ? grads[1] : at::zeros_like(saved[0]);
    const int64_t d_type = ctx->saved_data["d_type"].toInt();
    std::vector<at::Tensor> g = backward_kernel(gy, gs, saved[0], saved[1], saved[2], saved[3],
                                                d_type < 0 ? at::kFloat : static_cast<at::ScalarType>(d_type));
    return {g[0], d_type < 0 ? at::Tensor() : g[3], g[1], g[2], at::Tensor(), at::Tensor()};
  }
};

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
  const at::ScalarType y_type = y_type_of(r);
  if (add_layer_norm_fused(r, d, w, b) || add_layer_norm_rows_take(r, d, w, b, y_type)) {
    const c10::optional<at::Tensor> d_opt = d.defined() ? c10::optional<at::Tensor>(d) : c10::nullopt;
    torch::autograd::variable_list out = AddLayerNormFn::apply(r, d_opt, w, b, eps, static_cast<int64_t>(y_type));
    return {out[0], out[1]};
  }
  at::Tensor s = d.defined() ? r + d : r;
  return {s, at::layer_norm(s, {s.size(-1)}, w, b, eps)};
}

}  // namespace slm::model
