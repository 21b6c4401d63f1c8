// tests/model/add_layer_norm_check.h: what the residual add + LayerNorm tests of the CPU and the GPU
// kernels share: the double-precision reference (add, then layer_norm, through autograd), and
// add_layer_norm() as a block calls it under bf16 autocast against the fp32 composition (add,
// layer_norm, a cast to bf16).
#pragma once
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/add_layer_norm.h"
#include "util/torch_compat.h"

namespace slm::model::test {

// s = r + d and y = layer_norm(s) in double from the kernels' inputs; grads() gives the gradients
// of r, d, w and b for y's gradient gy and s's gs (gs may be undefined).
struct AddLayerNormReference {
  at::Tensor r, d, w, b, s, y;
  AddLayerNormReference(const at::Tensor& r0, const at::Tensor& d0, const at::Tensor& w0, const at::Tensor& b0)
      : r(r0.to(at::kDouble).requires_grad_(true)), d(d0.to(at::kDouble).requires_grad_(true)),
        w(w0.to(at::kDouble).requires_grad_(true)), b(b0.to(at::kDouble).requires_grad_(true)), s(r + d),
        y(at::layer_norm(s, {r0.size(-1)}, w, b, 1e-5)) {}
  std::vector<at::Tensor> grads(const at::Tensor& gy, const at::Tensor& gs) const {
    at::Tensor obj = (y * gy.to(at::kDouble)).sum();
    if (gs.defined()) obj = obj + (s * gs.to(at::kDouble)).sum();
    return torch::autograd::grad({obj}, {r, d, w, b}, {}, /*retain_graph=*/true);
  }
};

// On device `dev`: s in fp32, y in bf16, d's gradient in bf16, and the gradients of r, d, w and b
// close to the composition's.
inline void expect_autocast_autograd_matches(at::DeviceType dev, uint64_t seed) {
  torch::manual_seed(seed);
  const auto opt = torch::TensorOptions().device(dev);
  at::Tensor r = torch::randn({2, 5, 64}, opt).requires_grad_(true);
  at::Tensor d = torch::randn({2, 5, 64}, opt).to(at::kBFloat16).detach().requires_grad_(true);
  at::Tensor w = (torch::randn({64}, opt) + 1).requires_grad_(true), b = torch::randn({64}, opt).requires_grad_(true);
  compat::set_autocast_dtype(dev, at::kBFloat16);
  compat::set_autocast_enabled(dev, true);
  auto [s, y] = add_layer_norm(r, d, w, b);
  compat::set_autocast_enabled(dev, false);
  EXPECT_EQ(s.scalar_type(), at::kFloat);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  (y.to(at::kFloat).pow(2).sum() + s.sum()).backward();
  EXPECT_EQ(d.grad().scalar_type(), at::kBFloat16);
  at::Tensor r2 = r.detach().clone().requires_grad_(true), d2 = d.detach().to(at::kFloat).requires_grad_(true);
  at::Tensor w2 = w.detach().clone().requires_grad_(true), b2 = b.detach().clone().requires_grad_(true);
  at::Tensor s2 = r2 + d2;
  at::Tensor y2 = at::layer_norm(s2, {64}, w2, b2, 1e-5).to(at::kBFloat16);
  (y2.to(at::kFloat).pow(2).sum() + s2.sum()).backward();
  EXPECT_TRUE(at::allclose(r.grad(), r2.grad(), 2e-2, 2e-2));
  EXPECT_TRUE(at::allclose(d.grad().to(at::kFloat), d2.grad(), 2e-2, 2e-2));
  EXPECT_TRUE(at::allclose(w.grad(), w2.grad(), 2e-2, 2e-2));
  EXPECT_TRUE(at::allclose(b.grad(), b2.grad(), 2e-2, 2e-2));
}

}  // namespace slm::model::test
