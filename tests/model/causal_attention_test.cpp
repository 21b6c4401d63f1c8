// tests/model/causal_attention_test.cpp: the row-kernel attention against softmax(q k^T / sqrt(d),
// masked) v in double: output and the gradients of q, k, v, in fp32 (tight) and bf16 (bf16's
// rounding), sequence lengths that are not multiples of 16, in one query block and in several;
// the model uses it (GPT2 tests run
// through it on AVX-512 CPUs).
#include "model/causal_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace slm::model {
namespace {

struct Out {
  at::Tensor y, dq, dk, dv;
};

Out run(bool rows, at::ScalarType dt, int64_t T) {
  torch::manual_seed(6);
  const int64_t B = 2, H = 3, D = 8;
  at::Tensor q0 = torch::randn({B, H, T, D}) * 2, k0 = torch::randn({B, H, T, D}), v0 = torch::randn({B, H, T, D});
  at::Tensor dy = torch::randn({B, H, T, D});
  at::Tensor q = q0.to(dt).requires_grad_(true), k = k0.to(dt).requires_grad_(true), v = v0.to(dt).requires_grad_(true);
  at::Tensor y;
  if (rows) {
    y = causal_attention_rows(q, k, v);
  } else {
    at::Tensor att = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(D));
    att = att.masked_fill(at::ones({T, T}, at::kBool).triu(1), -INFINITY).softmax(-1);
    y = at::matmul(att, v);
  }
  y.backward(dy.to(dt));
  return {y.detach().to(at::kDouble), q.grad().to(at::kDouble), k.grad().to(at::kDouble), v.grad().to(at::kDouble)};
}

double rel(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

TEST(CausalAttentionRows, MatchesTheMathPath) {
  if (!causal_attention_rows_supported(at::zeros({1, 1, 1, 1}), at::zeros({1, 1, 1, 1}), at::zeros({1, 1, 1, 1})))
    GTEST_SKIP() << "no AVX-512 on this CPU: the model uses SDPA / the math path";
  for (int64_t T : {37, 300}) {  // one query block; two full blocks of 128 and a partial one
    const Out ref = run(false, at::kDouble, T);
    for (auto [dt, tol] : {std::pair{at::kFloat, 1e-5}, std::pair{at::kBFloat16, 3e-2}}) {
      const Out o = run(true, dt, T);
      EXPECT_LT(rel(o.y, ref.y), tol) << dt << " T " << T;
      EXPECT_LT(rel(o.dq, ref.dq), tol) << dt << " T " << T;
      EXPECT_LT(rel(o.dk, ref.dk), tol) << dt << " T " << T;
      EXPECT_LT(rel(o.dv, ref.dv), tol) << dt << " T " << T;
    }
    // the first position sees only itself: y = v there
    const Out f = run(true, at::kFloat, T);
    EXPECT_TRUE(at::allclose(f.y.select(2, 0), ref.y.select(2, 0), 0, 1e-6));
  }
}

}  // namespace
}  // namespace slm::model
