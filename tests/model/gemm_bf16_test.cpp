// tests/model/gemm_bf16_test.cpp: slm's bf16 GEMM against the double product of the same
// bf16-rounded operands, for every operand layout it packs differently (row-major, transposed,
// strided, fp32), shapes with partial tiles and odd K, bias, accumulation and bf16 output; and the bf16
// linear layer's value and gradients under CPU autocast.
#include "model/gemm_bf16.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/linear_bf16.h"
#include "util/torch_compat.h"

namespace slm::model {
namespace {

at::Tensor rounded(const at::Tensor& t) { return t.to(at::kBFloat16).to(at::kDouble); }

// max |got - want| relative to the largest |want|
double rel_err(const at::Tensor& got, const at::Tensor& want) {
  return (got.to(at::kDouble) - want).abs().max().item<double>() / want.abs().max().item<double>();
}

TEST(GemmBf16, MatchesTheDoubleProductOfTheRoundedOperands) {
  if (!gemm_bf16_cpu()) GTEST_SKIP() << "no AVX512-BF16 on this CPU: the model's linears use ATen";
  torch::manual_seed(3);
  for (auto [M, K, N] : {std::tuple{37, 18, 45}, std::tuple{100, 256, 96}, std::tuple{1, 2, 1}, std::tuple{25, 70, 33}, std::tuple{30, 17, 40}, std::tuple{13, 1, 35}}) {
    const at::Tensor a32 = torch::randn({M, K}), b32 = torch::randn({K, N}), bias = torch::randn({N});
    const at::Tensor want = at::mm(rounded(a32), rounded(b32));
    const at::Tensor a_t = a32.t().contiguous().to(at::kBFloat16).t();          // stride(0) == 1
    const at::Tensor b_t = b32.t().contiguous().to(at::kBFloat16).t();          // w^T of a row-major w
    const at::Tensor a_wide = torch::randn({M, K + 6}).to(at::kBFloat16);       // rows with a gap
    a_wide.narrow(1, 2, K).copy_(a32);
    const at::Tensor b_strided = torch::randn({K, 2 * N}).to(at::kBFloat16).slice(1, 0, 2 * N, 2);
    b_strided.copy_(b32);
    const std::vector<std::pair<at::Tensor, at::Tensor>> cases = {
        {a32.to(at::kBFloat16), b32.to(at::kBFloat16)}, {a32, b32}, {a_t, b_t}, {a_t, b32},
        {a_wide.narrow(1, 2, K), b_strided}, {a32.t().contiguous().t(), b32.t().contiguous().t()}};
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& [a, b] = cases[i];
      ASSERT_TRUE(gemm_bf16_supported(a, b));
      EXPECT_LT(rel_err(mm_bf16(a, b, at::kFloat), want), 1e-6) << "case " << i << " " << M << "x" << K << "x" << N;
      EXPECT_LT(rel_err(mm_bf16(a, b, at::kBFloat16, bias), want + bias.to(at::kDouble)), 8e-3) << "case " << i;
      at::Tensor acc = torch::ones({M, N});
      gemm_bf16(a, b, acc, bias, /*accumulate=*/true);
      EXPECT_LT(rel_err(acc, want + bias.to(at::kDouble) + 1), 1e-6) << "case " << i;
    }
  }
  EXPECT_FALSE(gemm_bf16_supported(torch::randn({4, 3}), torch::randn({3, 4}).to(at::kDouble)));
}

struct CpuAutocast {
  bool was = compat::autocast_enabled(at::kCPU);
  at::ScalarType was_dtype = compat::autocast_dtype(at::kCPU);
  CpuAutocast() {
    compat::set_autocast_dtype(at::kCPU, at::kBFloat16);
    compat::set_autocast_enabled(at::kCPU, true);
  }
  ~CpuAutocast() {
    compat::set_autocast_enabled(at::kCPU, was);
    compat::set_autocast_dtype(at::kCPU, was_dtype);
  }
};

TEST(LinearBf16, ValueAndGradientsUnderCpuAutocast) {
  if (!gemm_bf16_cpu()) GTEST_SKIP() << "no AVX512-BF16 on this CPU: the model's linears use ATen";
  torch::manual_seed(5);
  const at::Tensor w = (torch::randn({96, 64}) * 0.1).requires_grad_(true), b = torch::randn({96}).requires_grad_(true);
  const at::Tensor x = torch::randn({3, 20, 64}).requires_grad_(true), dy = torch::randn({3, 20, 96});
  at::Tensor y;
  {
    CpuAutocast on;
    y = linear(x, w, b);
  }
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  y.backward(dy.to(at::kBFloat16));
  EXPECT_EQ(x.grad().scalar_type(), at::kFloat);
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
  // The reference: the same products in double of the bf16-rounded operands.
  const at::Tensor x2 = rounded(x.detach()).reshape({60, 64}), w2 = rounded(w.detach());
  const at::Tensor dy2 = rounded(dy).reshape({60, 96});
  EXPECT_LT(rel_err(y.reshape({60, 96}), at::mm(x2, w2.t()) + b.detach().to(at::kDouble)), 8e-3);
  EXPECT_LT(rel_err(x.grad().reshape({60, 64}), at::mm(dy2, w2)), 8e-3);  // dx is bf16
  EXPECT_LT(rel_err(w.grad(), at::mm(dy2.t(), x2)), 1e-6);                 // dw accumulates in fp32
  EXPECT_LT(rel_err(b.grad(), dy2.sum(0)), 1e-6);
  // Without autocast it is at::linear itself.
  EXPECT_TRUE(at::equal(linear(x, w, b), at::linear(x, w, b)));
}

}  // namespace
}  // namespace slm::model
