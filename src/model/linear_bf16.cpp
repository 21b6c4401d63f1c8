// model/linear_bf16.cpp: see linear_bf16.h.
#include "model/linear_bf16.h"

#include <torch/torch.h>

#include "model/gemm_bf16.h"
#include "model/recompute.h"
#include "util/torch_compat.h"

namespace slm::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool takes(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const auto fp = [](const at::Tensor& t) { return t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16; };
  return x.device().is_cpu() && compat::autocast_enabled(at::kCPU) &&
         compat::autocast_dtype(at::kCPU) == at::kBFloat16 && gemm_bf16_cpu() && x.dim() >= 1 && w.dim() == 2 &&
         x.size(-1) == w.size(1) && fp(x) && fp(w) && w.device().is_cpu() &&
         (!b.defined() || (b.dim() == 1 && b.numel() == w.size(0) && fp(b)));
}

struct LinearBf16 : torch::autograd::Function<LinearBf16> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    AutocastOff no_autocast;  // the dtypes here are chosen explicitly
    const int64_t K = w.size(1), N = w.size(0);
    const at::Tensor x2 = x.reshape({-1, K}).to(at::kBFloat16);  // what autocast would have kept
    at::Tensor y = mm_bf16(x2, w.t(), at::kBFloat16, b.defined() ? b.to(at::kFloat).contiguous() : at::Tensor());
    ctx->save_for_backward({x2, w});
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["has_b"] = b.defined();
    if (b.defined()) ctx->saved_data["b_dtype"] = static_cast<int64_t>(b.scalar_type());
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = N;
    return y.view(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    AutocastOff no_autocast;
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &x2 = s[0], &w = s[1];
    const at::Tensor dy = g[0].reshape({-1, w.size(0)});
    at::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) {
      const auto x_dtype = static_cast<at::ScalarType>(ctx->saved_data["x_dtype"].toInt());
      std::vector<int64_t> shape = g[0].sizes().vec();
      shape.back() = w.size(1);
      dx = mm_bf16(dy, w, at::kBFloat16).to(x_dtype).view(shape);
    }
    if (ctx->needs_input_grad(1)) {
      dw = mm_bf16(dy.t(), x2, at::kFloat);
      if (w.scalar_type() != at::kFloat) dw = dw.to(w.scalar_type());
    }
    if (ctx->saved_data["has_b"].toBool() && ctx->needs_input_grad(2))
      db = dy.sum(0, false, at::kFloat).to(static_cast<at::ScalarType>(ctx->saved_data["b_dtype"].toInt()));
    return {dx, dw, db};
  }
};

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  if (!takes(x, w, b)) return at::linear(x, w, b);
  return LinearBf16::apply(x, w, b);
}

}  // namespace slm::model
