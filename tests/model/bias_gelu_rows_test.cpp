// tests/model/bias_gelu_rows_test.cpp: the CPU bias + GELU kernels (model/bias_gelu_rows.cpp)
// against the ATen composition they replace (add, then gelu with approximate = "tanh", in double
// through autograd): the output, the input gradient and the bias gradient, in fp32 and bf16,
// widths 1, 37, 768, 3072 and 4100 (not a multiple of 16), row counts 1 to 300, saturating inputs;
// the bias gradient the sum of the input gradient as stored, the same bits on 1 and 2 threads;
// what the kernels take; and fc_gelu() under CPU autocast against linear-with-bias + gelu. Each
// instruction set the CPU runs (AVX-512: fp32 and bf16; AVX2: fp32); skipped on a CPU with neither.
#include "model/bias_gelu_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/bias_gelu.h"
#include "model/bias_gelu_check.h"
#include "model/cpu_rows.h"
#include "model/kernel_test_util.h"

namespace slm::model {
namespace {

using test::rel_err;

struct Case {
  int64_t rows, N;
  at::ScalarType t;
  double tol;  // relative to the largest value
};

TEST(BiasGeluRows, MatchesAddThenGelu) {
  if (!cpu_rows_take(at::kFloat)) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU: fc_gelu is ATen's linear and gelu";
  test::for_each_cpu_rows([] {
    torch::manual_seed(41);
    for (const Case& c :
         {Case{1, 1, at::kFloat, 1e-5}, Case{7, 37, at::kFloat, 1e-5}, Case{300, 768, at::kBFloat16, 1e-2},
          Case{33, 4100, at::kBFloat16, 1e-2}, Case{5, 3072, at::kFloat, 1e-5}, Case{64, 3072, at::kBFloat16, 1e-2},
          Case{3, 17, at::kBFloat16, 1e-2}, Case{9, 13, at::kFloat, 1e-5}}) {
      if (!cpu_rows_take(c.t)) continue;
      at::Tensor x = torch::randn({c.rows, c.N}) * 3;
      x.view(-1)[0] = 40.0f, x.view(-1)[x.numel() - 1] = -40.0f;  // saturating: gelu = x and 0
      x = x.to(c.t);
      const at::Tensor b = torch::randn({c.N});
      ASSERT_TRUE(bias_gelu_rows_take(x, b));
      const test::BiasGeluReference ref(x, b);
      const at::Tensor y = bias_gelu_rows_forward(x, b);
      EXPECT_EQ(y.scalar_type(), c.t);
      EXPECT_LT(rel_err(y, ref.y.detach()), c.tol) << c.N;
      const at::Tensor gy = torch::randn({c.rows, c.N}).to(c.t);
      const std::vector<at::Tensor> g = bias_gelu_rows_backward(gy, x, b), r = ref.grads(gy);
      EXPECT_EQ(g[0].scalar_type(), c.t);
      EXPECT_EQ(g[1].scalar_type(), at::kFloat);
      EXPECT_LT(rel_err(g[0], r[0]), c.tol) << c.N << " gx";
      EXPECT_LT(rel_err(g[1], r[1]), c.tol) << c.N << " db";
      EXPECT_LT(rel_err(g[1], g[0].to(at::kDouble).sum(0)), 1e-5) << "db sums gx as stored";
      const int threads = at::get_num_threads();
      at::set_num_threads(1);
      const std::vector<at::Tensor> one = bias_gelu_rows_backward(gy, x, b);
      const at::Tensor y1 = bias_gelu_rows_forward(x, b);
      at::set_num_threads(threads);
      EXPECT_TRUE(at::equal(g[0], one[0]) && at::equal(g[1], one[1]) && at::equal(y, y1))
          << "the same bits on 1 thread";
    }
  });
}

TEST(BiasGeluRows, TakesContiguousFloatOrBf16WithAnFp32BiasOfItsWidth) {
  if (!cpu_rows_take(at::kFloat)) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  const at::Tensor x = torch::randn({4, 8}), b = torch::randn({8});
  EXPECT_TRUE(bias_gelu_rows_take(x, b));
  EXPECT_EQ(bias_gelu_rows_take(x.to(at::kBFloat16), b), cpu_rows_isa() == CpuRows::kAvx512) << "bf16: AVX-512 only";
  EXPECT_FALSE(bias_gelu_rows_take(x.to(at::kDouble), b));
  EXPECT_FALSE(bias_gelu_rows_take(x.t(), b)) << "not contiguous";
  EXPECT_FALSE(bias_gelu_rows_take(x, b.to(at::kBFloat16)));
  EXPECT_FALSE(bias_gelu_rows_take(x, torch::randn({4})));
  EXPECT_FALSE(bias_gelu_rows_take(x, at::Tensor()));
  EXPECT_TRUE(bias_gelu_fused(x, b));
  EXPECT_THROW(bias_gelu(x, torch::randn({3})), c10::Error);
}

TEST(BiasGeluRows, FcGeluUnderAutocastMatchesLinearThenGelu) {
  if (!cpu_rows_take(at::kBFloat16)) GTEST_SKIP() << "no AVX-512 on this CPU: CPU autocast's bf16 runs ATen's ops";
  test::expect_fc_gelu_autocast_matches(at::kCPU, 42);
}

TEST(BiasGeluRows, FcGeluInFp32MatchesLinearThenGelu) {
  torch::manual_seed(43);
  at::Tensor h = torch::randn({3, 5, 48}).requires_grad_(true);
  at::Tensor w = (torch::randn({200, 48}) * 0.1).requires_grad_(true), b = torch::randn({200}).requires_grad_(true);
  at::Tensor y = fc_gelu(h, w, b);
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  const at::Tensor gy = torch::randn_like(y);
  y.backward(gy);
  const test::BiasGeluReference ref(at::linear(h, w).detach(), b.detach());
  EXPECT_LT(rel_err(y, ref.y.detach()), 1e-5);
  at::Tensor h2 = h.detach().clone().requires_grad_(true), w2 = w.detach().clone().requires_grad_(true);
  at::Tensor b2 = b.detach().clone().requires_grad_(true);
  at::gelu(at::linear(h2, w2, b2), "tanh").backward(gy);
  EXPECT_LT(rel_err(h.grad(), h2.grad()), 1e-5);
  EXPECT_LT(rel_err(w.grad(), w2.grad()), 1e-5);
  EXPECT_LT(rel_err(b.grad(), b2.grad()), 1e-5);
}

}  // namespace
}  // namespace slm::model
