// tests/model/add_layer_norm_rows_test.cpp: the CPU residual add + LayerNorm kernels
// (model/add_layer_norm_rows.cpp) against the ATen composition they replace (add, then layer_norm,
// in double through autograd): the sum (ATen's add's bits), the normalised rows, the gradients of
// both inputs, of w and of b, with and without a gradient of the sum, fp32 and the mixed case of
// bf16 autocast (fp32 residual, bf16 delta, bf16 output and output gradient), row lengths 1, 37, 257, 768
// and 1600, row counts below, at and beyond a block of the weight gradients' partial sums; those
// the same bits on 1 and 2 threads; without a delta; and add_layer_norm() under CPU autocast.
// Skipped on a CPU without AVX-512.
#include "model/add_layer_norm_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/add_layer_norm.h"
#include "model/add_layer_norm_check.h"
#include "model/avx512_rows.h"
#include "model/kernel_test_util.h"
#include "util/torch_compat.h"

namespace slm::model {
namespace {

using test::rel_err;

struct Case {
  int64_t rows, C;
  at::ScalarType d, y;  // r is fp32; gy comes in y's dtype
  double tol;           // on y and the gradients, relative to their largest value
};

TEST(AddLayerNormRows, MatchesAddThenLayerNorm) {
  if (!avx512_rows::cpu_has()) GTEST_SKIP() << "no AVX-512 on this CPU: add_layer_norm is ATen's add and layer_norm";
  torch::manual_seed(31);
  for (const Case& c : {Case{1, 1, at::kFloat, at::kFloat, 1e-5}, Case{7, 37, at::kFloat, at::kFloat, 1e-5},
                        Case{33, 768, at::kBFloat16, at::kBFloat16, 1e-2}, Case{6, 257, at::kFloat, at::kFloat, 1e-5},
                        Case{32, 768, at::kFloat, at::kBFloat16, 1e-2}, Case{300, 768, at::kFloat, at::kFloat, 1e-5},
                        Case{5, 1600, at::kBFloat16, at::kFloat, 1e-2}, Case{97, 64, at::kBFloat16, at::kBFloat16, 1e-2}}) {
    const at::Tensor r = torch::randn({c.rows, c.C}) * 3 + 1, d = torch::randn({c.rows, c.C}).to(c.d);
    const at::Tensor w = torch::randn({c.C}) + 1, b = torch::randn({c.C});
    ASSERT_TRUE(add_layer_norm_rows_take(r, d, w, b, c.y));
    const std::vector<at::Tensor> f = add_layer_norm_rows_forward(r, d, w, b, 1e-5, c.y);
    EXPECT_TRUE(at::equal(f[0], r + d)) << "the sum is ATen's add, rounded alike (C = " << c.C << ")";
    EXPECT_EQ(f[1].scalar_type(), c.y);
    const test::AddLayerNormReference ref0(r, d, w, b);
    EXPECT_LT(rel_err(f[1], ref0.y.detach()), c.tol) << c.C;
    for (bool with_gs : {false, true}) {
      const at::Tensor gy = torch::randn({c.rows, c.C}).to(c.y);
      const at::Tensor gs = with_gs ? torch::randn({c.rows, c.C}) : at::Tensor();
      const std::vector<at::Tensor> g = add_layer_norm_rows_backward(gy, gs, f[0], f[2], f[3], w, c.d);
      const std::vector<at::Tensor> ref = ref0.grads(gy, gs);
      EXPECT_LT(rel_err(g[0], ref[0]), c.tol) << c.C << " gs " << with_gs;
      EXPECT_LT(rel_err(g[0], ref[1]), c.tol) << "d's gradient is r's";
      EXPECT_TRUE(g[3].scalar_type() == c.d && at::equal(g[3], g[0].to(c.d))) << "d's, in d's dtype as .to() rounds it";
      EXPECT_LT(rel_err(g[1], ref[2]), c.tol) << c.C << " dw";
      EXPECT_LT(rel_err(g[2], ref[3]), c.tol) << c.C << " db";
      const int threads = at::get_num_threads();
      at::set_num_threads(1);
      const std::vector<at::Tensor> one = add_layer_norm_rows_backward(gy, gs, f[0], f[2], f[3], w, c.d);
      at::set_num_threads(threads);
      EXPECT_TRUE(at::equal(g[1], one[1]) && at::equal(g[2], one[2]) && at::equal(g[0], one[0]))
          << "the same bits on 1 thread as on " << threads;
    }
  }
}

TEST(AddLayerNormRows, TakesWhatItCan) {
  if (!avx512_rows::cpu_has()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const at::Tensor r = torch::randn({4, 8}), d = torch::randn({4, 8}), w = torch::randn({8}), b = torch::randn({8});
  EXPECT_TRUE(add_layer_norm_rows_take(r, d.to(at::kBFloat16), w, b, at::kBFloat16));
  EXPECT_TRUE(add_layer_norm_rows_take(r, at::Tensor(), w, b, at::kFloat)) << "no delta: s = r";
  EXPECT_FALSE(add_layer_norm_rows_take(r.to(at::kDouble), d.to(at::kDouble), w, b, at::kDouble));
  EXPECT_FALSE(add_layer_norm_rows_take(r.t(), d.t(), w, b, at::kFloat)) << "not contiguous";
  EXPECT_FALSE(add_layer_norm_rows_take(r, d.narrow(1, 0, 7), w, b, at::kFloat)) << "shapes differ";
  EXPECT_FALSE(add_layer_norm_rows_take(r, d, w.narrow(0, 0, 7), b, at::kFloat)) << "w not of C";
  EXPECT_FALSE(add_layer_norm_rows_take(r, d.to(at::kHalf), w, b, at::kFloat));
}

// Without a delta (a stage's first block): s = r, y = layer_norm(r), r's gradient through both.
TEST(AddLayerNormRows, WithoutDelta) {
  if (!avx512_rows::cpu_has()) GTEST_SKIP() << "no AVX-512 on this CPU";
  torch::manual_seed(33);
  at::Tensor r = (torch::randn({3, 7, 96}) * 2).requires_grad_(true);
  at::Tensor w = (torch::randn({96}) + 1).requires_grad_(true), b = torch::randn({96}).requires_grad_(true);
  auto [s, y] = add_layer_norm(r, at::Tensor(), w, b);
  EXPECT_TRUE(at::equal(s, r));
  const at::Tensor gy = torch::randn({3, 7, 96}), gs = torch::randn({3, 7, 96});
  ((y * gy).sum() + (s * gs).sum()).backward();
  at::Tensor rd = r.detach().to(at::kDouble).requires_grad_(true), wd = w.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor bd = b.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor yd = at::layer_norm(rd, {96}, wd, bd, 1e-5);
  ((yd * gy.to(at::kDouble)).sum() + (rd * gs.to(at::kDouble)).sum()).backward();
  EXPECT_LT(rel_err(y.detach(), yd.detach()), 1e-5);
  EXPECT_LT(rel_err(r.grad(), rd.grad()), 1e-5);
  EXPECT_LT(rel_err(w.grad(), wd.grad()), 1e-5);
  EXPECT_LT(rel_err(b.grad(), bd.grad()), 1e-5);
}

// Through add_layer_norm() as a block calls it under CPU bf16 autocast: y in bf16 (the kernel's:
// ATen's layer_norm gives fp32 there), gradients to all four inputs in their own dtypes, close to
// the fp32 composition's.
TEST(AddLayerNormRows, AutogradUnderAutocast) {
  if (!avx512_rows::cpu_has()) GTEST_SKIP() << "no AVX-512 on this CPU";
  test::expect_autocast_autograd_matches(at::kCPU, 32);
}

}  // namespace
}  // namespace slm::model
