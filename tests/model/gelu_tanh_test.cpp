// tests/model/gelu_tanh_test.cpp: the CPU GELU (AVX-512, and AVX2 on the CPUs that have it: each
// instruction set the CPU runs) against at::gelu(x, "tanh") in double, value and gradient, in
// fp32 (tight) and bf16 (bf16's rounding; AVX-512), over small, large and saturating inputs and a
// length that is not a multiple of 16 or 8; in fp32 also to each value's own precision where x < 0
// and the GELU is small (where 1 + tanh(u) would cancel).
#include "model/gelu_tanh.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/cpu_rows.h"
#include "model/kernel_test_util.h"

namespace slm::model {
namespace {

TEST(GeluTanh, MatchesATen) {
  if (!cpu_rows_take(at::kFloat)) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU: gelu_tanh is at::gelu itself";
  test::for_each_cpu_rows([] {
    torch::manual_seed(7);
    at::Tensor x0 =
        at::cat({torch::randn({1000}) * 3, torch::tensor({0.0f, 1e-4f, -1e-4f, 12.0f, -12.0f, 90.0f, -90.0f})});
    at::Tensor dy = torch::randn({x0.numel()});
    at::Tensor xd = x0.to(at::kDouble).requires_grad_(true);
    at::Tensor ref = at::gelu(xd, "tanh");
    ref.backward(dy.to(at::kDouble));
    for (auto [dt, tol] : {std::pair{at::kFloat, 2e-6}, std::pair{at::kBFloat16, 1e-2}}) {
      if (!cpu_rows_take(dt)) continue;
      at::Tensor x = x0.to(dt).detach().requires_grad_(true);
      at::Tensor y = gelu_tanh(x);
      y.backward(dy.to(dt));
      // against the double reference of the same (rounded) inputs
      at::Tensor xr = x.detach().to(at::kDouble).requires_grad_(true);
      at::Tensor yr = at::gelu(xr, "tanh");
      yr.backward(dy.to(dt).to(at::kDouble));
      const double ys = yr.abs().max().item<double>(), gs = xr.grad().abs().max().item<double>();
      EXPECT_LT((y.to(at::kDouble) - yr).abs().max().item<double>(), tol * ys) << dt;
      EXPECT_LT((x.grad().to(at::kDouble) - xr.grad()).abs().max().item<double>(), tol * gs) << dt;
      EXPECT_EQ(y.scalar_type(), dt);
    }
    EXPECT_TRUE(at::allclose(ref.detach().to(at::kFloat), gelu_tanh(x0), 1e-5, 1e-6));
  });
}

TEST(GeluTanh, PreciseWhereNegativeInputsMakeItSmall) {
  if (!cpu_rows_take(at::kFloat)) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU: gelu_tanh is at::gelu itself";
  test::for_each_cpu_rows([] {
    at::Tensor x = torch::linspace(-9.0, -1.5, 2001).requires_grad_(true);
    at::Tensor y = gelu_tanh(x);
    y.backward(torch::ones_like(y));
    at::Tensor xd = x.detach().to(at::kDouble).requires_grad_(true);
    // x sigmoid(2u): the same function, without the cancellation even in double (at::gelu's 1 + tanh
    // is 0 in double below x ~ -5.5)
    at::Tensor yd = xd * at::sigmoid(2 * 0.7978845608028654 * (xd + 0.044715 * xd.pow(3)));
    yd.backward(torch::ones_like(yd));
    const auto worst = [](const at::Tensor& got, const at::Tensor& ref) {
      return ((got.to(at::kDouble) - ref) / ref.abs().clamp_min(1e-30)).abs().max().item<double>();
    };
    EXPECT_LT(worst(y.detach(), yd.detach()), 2e-5) << "gelu's relative error";
    EXPECT_LT(worst(x.grad(), xd.grad()), 2e-5) << "its slope's";
  });
}

}  // namespace
}  // namespace slm::model
