// tests/model/bias_gelu_check.h: what the bias + GELU tests of the CPU and the GPU kernels share:
// the double-precision reference (add, then gelu with approximate = "tanh", through autograd), and
// fc_gelu() as a block calls it under bf16 autocast against linear-with-bias + gelu in fp32.
#pragma once
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/bias_gelu.h"
#include "model/kernel_test_util.h"
#include "util/torch_compat.h"

namespace slm::model::test {

// y = gelu_tanh(x + b) in double from the kernels' inputs; grads(gy) gives x's and b's gradients.
struct BiasGeluReference {
  at::Tensor x, b, y;
  BiasGeluReference(const at::Tensor& x0, const at::Tensor& b0)
      : x(x0.to(at::kDouble).requires_grad_(true)),
        b(b0.to(at::kDouble).requires_grad_(true)),
        y(at::gelu(x + b, "tanh")) {}
  std::vector<at::Tensor> grads(const at::Tensor& gy) const {
    return torch::autograd::grad({(y * gy.to(at::kDouble)).sum()}, {x, b}, {}, /*retain_graph=*/true);
  }
};

// On device `dev`: fc_gelu takes the kernels (bias_gelu_fused on the matmul's bf16 output), its
// output is bf16, and it and the gradients of h, w and b are close to the fp32 composition's.
inline void expect_fc_gelu_autocast_matches(at::DeviceType dev, uint64_t seed) {
  torch::manual_seed(seed);
  const auto opt = torch::TensorOptions().device(dev);
  at::Tensor h = torch::randn({2, 9, 64}, opt).requires_grad_(true);
  at::Tensor w = (torch::randn({256, 64}, opt) * 0.1).requires_grad_(true),
             b = torch::randn({256}, opt).requires_grad_(true);
  ASSERT_TRUE(bias_gelu_fused(torch::empty({2, 9, 256}, opt.dtype(at::kBFloat16)), b));
  compat::set_autocast_dtype(dev, at::kBFloat16);
  compat::set_autocast_enabled(dev, true);
  at::Tensor y = fc_gelu(h, w, b);
  compat::set_autocast_enabled(dev, false);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  y.to(at::kFloat).pow(2).sum().backward();
  at::Tensor h2 = h.detach().clone().requires_grad_(true), w2 = w.detach().clone().requires_grad_(true);
  at::Tensor b2 = b.detach().clone().requires_grad_(true);
  at::Tensor y2 = at::gelu(at::linear(h2, w2, b2), "tanh");
  y2.pow(2).sum().backward();
  EXPECT_TRUE(at::allclose(y.to(at::kFloat), y2, 3e-2, 3e-2));
  EXPECT_LT(rel_err(h.grad(), h2.grad().to(at::kDouble)), 3e-2);
  EXPECT_LT(rel_err(w.grad(), w2.grad().to(at::kDouble)), 3e-2);
  EXPECT_LT(rel_err(b.grad(), b2.grad().to(at::kDouble)), 3e-2);
}

}  // namespace slm::model::test
