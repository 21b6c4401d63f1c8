// model/bias_gelu.cpp: see bias_gelu.h.
#include "model/bias_gelu.h"

#include <torch/torch.h>

#include "model/gelu_tanh.h"
#include "model/own_cuda_kernels.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/ops.h"
#endif

namespace slm::model {
namespace {

#ifdef SLM_HAVE_CUDA_KERNELS
// Saves x (the matmul's output, as eager's GELU saves its input) and b.
struct BiasGeluFn : torch::autograd::Function<BiasGeluFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& b) {
    ctx->save_for_backward({x, b});
    return cuda::bias_gelu_forward(x, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    std::vector<at::Tensor> g = cuda::bias_gelu_backward(grads[0], saved[0], saved[1]);
    return {g[0], g[1]};
  }
};

// Whether the kernel takes an input like x (its dtype, device and layout) with the bias b of n columns.
bool takes(const at::Tensor& x, const at::Tensor& b, int64_t n) {
  return own_cuda_kernels() && cuda::kernels_take(x) && b.defined() && b.device() == x.device() &&
         b.scalar_type() == at::kFloat && b.is_contiguous() && b.dim() == 1 && b.numel() == n;
}
#endif

}  // namespace

bool bias_gelu_fused(const at::Tensor& x, const at::Tensor& b) {
#ifdef SLM_HAVE_CUDA_KERNELS
  return x.dim() >= 1 && takes(x, b, x.size(-1));
#else
  (void)x, (void)b;
  return false;
#endif
}

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& b) {
#ifdef SLM_HAVE_CUDA_KERNELS
  TORCH_CHECK(bias_gelu_fused(x, b), "bias_gelu: needs a contiguous CUDA tensor and an fp32 bias of its last size");
  return BiasGeluFn::apply(x, b);
#else
  (void)x, (void)b;
  TORCH_CHECK(false, "bias_gelu: this build has no own CUDA kernels");
#endif
}

at::Tensor fc_gelu(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b, const Linear& linear) {
  const auto fc = [&](const at::Tensor& bias) { return linear ? linear(h, w, bias) : at::linear(h, w, bias); };
#ifdef SLM_HAVE_CUDA_KERNELS
  // The matmul's output (in autocast's dtype under autocast) is contiguous and of a dtype the
  // kernels take whenever h is.
  if (takes(h, b, w.size(0))) return bias_gelu(fc(at::Tensor()), b);
#endif
  return gelu_tanh(fc(b));
}

}  // namespace slm::model
