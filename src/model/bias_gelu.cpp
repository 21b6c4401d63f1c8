// model/bias_gelu.cpp: see bias_gelu.h.
#include "model/bias_gelu.h"

#include <torch/torch.h>

#include "model/bias_gelu_rows.h"
#include "model/gelu_tanh.h"
#include "model/own_cuda_kernels.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/ops.h"
#endif

namespace slm::model {
namespace {

// The kernels of x's device: y forward; {gx, db} backward.
at::Tensor forward_kernel(const at::Tensor& x, const at::Tensor& b) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (x.is_cuda()) return cuda::bias_gelu_forward(x, b);
#endif
  return bias_gelu_rows_forward(x, b);
}

std::vector<at::Tensor> backward_kernel(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& b) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (x.is_cuda()) return cuda::bias_gelu_backward(gy, x, b);
#endif
  return bias_gelu_rows_backward(gy, x, b);
}

// Saves x (the matmul's output, as eager's GELU saves its input) and b.
struct BiasGeluFn : torch::autograd::Function<BiasGeluFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& b) {
    ctx->save_for_backward({x, b});
    return forward_kernel(x, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    std::vector<at::Tensor> g = backward_kernel(grads[0], saved[0], saved[1]);
    return {g[0], g[1]};
  }
};

// Whether the CUDA kernels take an input like x (its dtype, device and layout) with the bias b of
// n columns.
bool cuda_takes(const at::Tensor& x, const at::Tensor& b, int64_t n) {
#ifdef SLM_HAVE_CUDA_KERNELS
  return own_cuda_kernels() && cuda::kernels_take(x) && b.defined() && b.device() == x.device() &&
         b.scalar_type() == at::kFloat && b.is_contiguous() && b.dim() == 1 && b.numel() == n;
#else
  (void)x, (void)b, (void)n;
  return false;
#endif
}

// Whether fc_gelu takes the matmul without its bias for h and b: a kernel of h's device takes b
// (and the matmul's output, like h; that is checked again on the output itself).
bool fc_takes_kernel(const at::Tensor& h, const at::Tensor& b, int64_t n) {
  return h.is_cuda() ? cuda_takes(h, b, n) : h.device().is_cpu() && bias_gelu_rows_take_bias(b, n);
}

}  // namespace

bool bias_gelu_fused(const at::Tensor& x, const at::Tensor& b) {
  if (x.dim() < 1) return false;
  return x.is_cuda() ? cuda_takes(x, b, x.size(-1)) : bias_gelu_rows_take(x, b);
}

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& b) {
  TORCH_CHECK(bias_gelu_fused(x, b),
              "bias_gelu: needs a contiguous CUDA tensor (with the own kernels) or an AVX-512 CPU's, and an fp32 bias "
              "of its last size");
  return BiasGeluFn::apply(x, b);
}

at::Tensor fc_gelu(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b, const Linear& linear) {
  const auto fc = [&](const at::Tensor& bias) { return linear ? linear(h, w, bias) : at::linear(h, w, bias); };
  if (!fc_takes_kernel(h, b, w.size(0))) return gelu_tanh(fc(b));
  // The matmul's output (in autocast's dtype under autocast) is contiguous and of a dtype the
  // kernels take whenever h is; if not, the bias is added as the matmul would have.
  const at::Tensor x = fc(at::Tensor());
  return bias_gelu_fused(x, b) ? bias_gelu(x, b) : gelu_tanh(x + b.to(x.scalar_type()));
}

}  // namespace slm::model
