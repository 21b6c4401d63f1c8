// tests/model/causal_attention_test.cpp: the row-kernel attention against softmax(q k^T / sqrt(d),
// masked) v in double: output and the gradients of q, k, v, in fp32 (tight) and bf16 (bf16's
// rounding; AVX-512), sequence lengths that are not multiples of 16 or 8, in one query block and
// in several, on contiguous tensors and on the strided views the model passes; each instruction
// set the CPU runs (the GPT2 tests run through it on AVX2 and AVX-512 CPUs in LibTorch 1.x).
#include "model/causal_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "model/cpu_rows.h"
#include "model/kernel_test_util.h"
#include "util/torch_compat.h"

namespace slm::model {
namespace {

struct Out {
  at::Tensor y, dq, dk, dv;
};

// views: q, k, v as the model passes them (heads of one (B, T, 3C) projection: (B, H, T, D) views
// whose batch and head dimensions do not fold) and dy as the output's reshape passes it back.
Out run(bool rows, at::ScalarType dt, int64_t T, bool views = false) {
  torch::manual_seed(6);
  const int64_t B = 2, H = 3, D = 8;
  at::Tensor q0 = torch::randn({B, H, T, D}) * 2, k0 = torch::randn({B, H, T, D}), v0 = torch::randn({B, H, T, D});
  at::Tensor dy = torch::randn({B, H, T, D});
  if (views) {
    at::Tensor qkv = at::stack({q0, k0, v0}, 0).permute({1, 3, 0, 2, 4}).contiguous().to(dt);  // (B, T, 3, H, D)
    qkv.requires_grad_(true);
    at::Tensor y = causal_attention_rows(qkv.select(2, 0).transpose(1, 2), qkv.select(2, 1).transpose(1, 2),
                                         qkv.select(2, 2).transpose(1, 2));
    y.backward(dy.transpose(1, 2).contiguous().transpose(1, 2).to(dt));
    at::Tensor g = qkv.grad().to(at::kDouble);
    return {y.detach().to(at::kDouble), g.select(2, 0).transpose(1, 2), g.select(2, 1).transpose(1, 2),
            g.select(2, 2).transpose(1, 2)};
  }
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
    GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU: the model uses SDPA / the math path";
  test::for_each_cpu_rows([] {
    for (int64_t T : {37, 300, 1030}) {  // one query block; two and four blocks, the last zero-padded
      const Out ref = run(false, at::kDouble, T);
      for (auto [dt, tol] : {std::pair{at::kFloat, 1e-5}, std::pair{at::kBFloat16, 3e-2}})
        for (bool views : {false, true}) {
          if (!cpu_rows_take(dt)) continue;
          const Out o = run(true, dt, T, views);
          EXPECT_LT(rel(o.y, ref.y), tol) << dt << " T " << T << " views " << views;
          EXPECT_LT(rel(o.dq, ref.dq), tol) << dt << " T " << T << " views " << views;
          EXPECT_LT(rel(o.dk, ref.dk), tol) << dt << " T " << T << " views " << views;
          EXPECT_LT(rel(o.dv, ref.dv), tol) << dt << " T " << T << " views " << views;
        }
      // the first position sees only itself: y = v there
      const Out f = run(true, at::kFloat, T);
      EXPECT_TRUE(at::allclose(f.y.select(2, 0), ref.y.select(2, 0), 0, 1e-6));
    }
  });
}

// The rule the model follows: always with 1.x (instead of its math path); with 2.x's SDPA beside
// it, bf16 up to T = 1024 only (SDPA's fp32 steps were as fast or faster).
TEST(CausalAttentionRows, PreferredWhereMeasuredFaster) {
  const auto prefer = [](at::ScalarType dt, int64_t T) {
    const at::Tensor q = at::zeros({1, 2, T, 8}, at::TensorOptions().dtype(dt));
    return prefer_causal_attention_rows(q, q, q);
  };
  bool any = false;
  test::for_each_cpu_rows([&] {
    any = true;
    EXPECT_TRUE(prefer(at::kFloat, 256) == !compat::kHasSdpa);
    EXPECT_TRUE(prefer(at::kFloat, 1025) == !compat::kHasSdpa);
    EXPECT_FALSE(prefer(at::kDouble, 256));  // not a dtype the kernels take
    if (!cpu_rows_take(at::kBFloat16)) {
      EXPECT_FALSE(prefer(at::kBFloat16, 256));
      return;
    }
    EXPECT_TRUE(prefer(at::kBFloat16, 1024));
    EXPECT_TRUE(prefer(at::kBFloat16, 1025) == !compat::kHasSdpa);
  });
  if (!any) {
    EXPECT_FALSE(prefer(at::kFloat, 256));  // no kernels on this CPU: never
  }
}

}  // namespace
}  // namespace slm::model
