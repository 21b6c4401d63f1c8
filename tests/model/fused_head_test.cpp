// tests/model/fused_head_test.cpp: the chunked head + cross-entropy against linear + cross_entropy:
// loss and both gradients in double (exact up to rounding), in bf16 autocast (bf16's rounding),
// chunks that do not divide the rows, padding rows of the weight (zero gradient), the padded width
// GPUs use, no-grad calls.
#include "model/fused_head.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/autocast.h"
#include "model/cpu_rows.h"
#include "model/kernel_test_util.h"
#include "model/xent_rows.h"

namespace slm::model {
namespace {

struct Result {
  at::Tensor loss, dx, dw;
};

// V real rows of w's Vp; reference: linear over the real rows, then cross_entropy.
Result run(bool fused, at::ScalarType dt, int64_t rows, const std::string& precision = "fp32", int64_t width = 0) {
  torch::manual_seed(3);
  const int64_t N = 23, C = 16, V = 37, Vp = 48;
  at::Tensor x = torch::randn({N, C}, torch::dtype(dt)).requires_grad_(true);
  at::Tensor w = (torch::randn({Vp, C}, torch::dtype(dt)) * 0.5).requires_grad_(true);
  at::Tensor t = torch::randint(V, {N}, torch::kLong);
  at::Tensor loss;
  {
    model::AutocastGuard autocast(precision, "cpu");
    loss = fused ? fused_linear_cross_entropy(x, w, V, t, rows, width)
                 : at::cross_entropy_loss(at::linear(x, w.narrow(0, 0, V)), t);
  }
  (loss * 3.0).backward();  // a gradient other than 1 reaches the saved gradients
  return {loss.detach(), x.grad(), w.grad()};
}

TEST(FusedHead, MatchesLinearCrossEntropyInDouble) {
  const Result ref = run(false, at::kDouble, 0);
  for (int64_t rows : {0, 1, 5, 23, 100}) {
    const Result f = run(true, at::kDouble, rows);
    EXPECT_NEAR(f.loss.item<double>(), ref.loss.item<double>(), 1e-12) << rows;
    EXPECT_TRUE(at::allclose(f.dx, ref.dx, 0, 1e-12)) << rows;
    EXPECT_TRUE(at::allclose(f.dw, ref.dw, 0, 1e-12)) << rows;
    EXPECT_EQ(f.dw.narrow(0, 37, 11).abs().max().item<double>(), 0.0);  // padding rows
  }
}

// The padded width (as on GPUs): the columns past V are -inf, so the same loss and gradients.
TEST(FusedHead, PaddedWidthMatches) {
  const Result ref = run(false, at::kDouble, 0);
  for (int64_t width : {40, 48}) {
    const Result f = run(true, at::kDouble, 5, "fp32", width);
    EXPECT_NEAR(f.loss.item<double>(), ref.loss.item<double>(), 1e-12) << width;
    EXPECT_TRUE(at::allclose(f.dx, ref.dx, 0, 1e-12)) << width;
    EXPECT_TRUE(at::allclose(f.dw, ref.dw, 0, 1e-12)) << width;
    EXPECT_EQ(f.dw.narrow(0, 37, 11).abs().max().item<double>(), 0.0);  // padding rows
  }
  const Result ref16 = run(false, at::kFloat, 0, "bf16"), f16 = run(true, at::kFloat, 7, "bf16", 48);
  EXPECT_NEAR(f16.loss.item<double>(), ref16.loss.item<double>(), 1e-2);
  EXPECT_EQ(f16.dw.narrow(0, 37, 11).abs().max().item<double>(), 0.0);
  at::Tensor x = torch::randn({3, 16}), w = torch::randn({48, 16}), t = torch::randint(37, {3}, torch::kLong);
  EXPECT_THROW(fused_linear_cross_entropy(x, w, 37, t, 0, 36), c10::Error);  // narrower than V
  EXPECT_THROW(fused_linear_cross_entropy(x, w, 37, t, 0, 49), c10::Error);  // wider than w
}

TEST(FusedHead, Bf16AutocastWithinRounding) {
  const Result ref = run(false, at::kFloat, 0, "bf16"), f = run(true, at::kFloat, 7, "bf16");
  EXPECT_EQ(f.loss.scalar_type(), at::kFloat);
  EXPECT_EQ(f.dx.scalar_type(), at::kFloat);
  EXPECT_NEAR(f.loss.item<double>(), ref.loss.item<double>(), 1e-2);
  const double scale = ref.dw.abs().max().item<double>();
  EXPECT_LT((f.dw - ref.dw).abs().max().item<double>(), 0.02 * scale);
  EXPECT_LT((f.dx - ref.dx).abs().max().item<double>(), 0.02 * ref.dx.abs().max().item<double>());
  // and it really ran in bf16: fp32 gives a different loss
  EXPECT_NE(run(true, at::kFloat, 7).loss.item<float>(), f.loss.item<float>());
}

TEST(FusedHead, NoGradGivesTheSameLoss) {
  torch::manual_seed(4);
  at::Tensor x = torch::randn({9, 8}), w = torch::randn({20, 8}), t = torch::randint(17, {9}, torch::kLong);
  const double with = fused_linear_cross_entropy(x.requires_grad_(true), w, 17, t, 4).item<double>();
  torch::NoGradGuard no_grad;
  EXPECT_DOUBLE_EQ(fused_linear_cross_entropy(x, w, 17, t, 4).item<double>(), with);
  EXPECT_THROW(fused_linear_cross_entropy(x, w, 21, t), c10::Error);  // V beyond w's rows
}

}  // namespace
}  // namespace slm::model

namespace slm::model {
namespace {

// The one-pass row kernel against ATen's log_softmax in double: loss and softmax - onehot, for a
// row length that is not a multiple of 16 or 8, large logits (the max shift) and both dtypes (bf16:
// AVX-512), with each instruction set the CPU runs.
TEST(XentRows, MatchesLogSoftmax) {
  if (!xent_rows_supported(at::zeros({1, 16}), 16))
    GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU: the fused head uses ATen's ops (tested above)";
  test::for_each_cpu_rows([] {
    torch::manual_seed(5);
    for (int64_t V : {1, 37, 1000}) {
      at::Tensor logits = torch::randn({6, V}) * 8 + 40, t = torch::randint(V, {6}, torch::kLong);
      at::Tensor ref_logp = at::log_softmax(logits.to(at::kDouble), 1);
      at::Tensor ref_loss = -ref_logp.gather(1, t.unsqueeze(1)).squeeze(1);
      at::Tensor ref_grad = ref_logp.exp().scatter_add(1, t.unsqueeze(1), -at::ones({6, 1}, at::kDouble));
      at::Tensor g = logits.clone();
      EXPECT_TRUE(at::allclose(xent_rows(g, t, true, V).to(at::kDouble), ref_loss, 1e-5, 1e-5)) << V;
      EXPECT_LT((g.to(at::kDouble) - ref_grad).abs().max().item<double>(), 1e-6) << V;
      at::Tensor f = logits.clone();
      EXPECT_TRUE(at::allclose(xent_rows(f, t, false, V).to(at::kDouble), ref_loss, 1e-5, 1e-5)) << V;
      EXPECT_TRUE(at::equal(f, logits)) << "no gradient asked: the logits stay";
      if (!cpu_rows_take(at::kBFloat16)) continue;
      at::Tensor b = logits.to(at::kBFloat16), b_copy = b.clone();
      const at::Tensor bl = xent_rows(b_copy, t, false, V);
      EXPECT_TRUE(at::equal(b_copy, b)) << "no gradient asked: the logits stay";
      at::Tensor blogp = at::log_softmax(b.to(at::kDouble), 1);  // of the bf16-rounded logits
      EXPECT_TRUE(at::allclose(bl.to(at::kDouble), -blogp.gather(1, t.unsqueeze(1)).squeeze(1), 1e-5, 1e-4)) << V;
      at::Tensor bgrad = blogp.exp().scatter_add(1, t.unsqueeze(1), -at::ones({6, 1}, at::kDouble));
      xent_rows(b, t, true, V);
      EXPECT_LT((b.to(at::kDouble) - bgrad).abs().max().item<double>(), 4e-3) << V;  // bf16's rounding of [-1, 1]
    }
    at::Tensor bad = at::zeros({2, 5});
    EXPECT_THROW(xent_rows(bad, torch::tensor({0, 5}, torch::kLong), false, 5), c10::Error);
  });
}

}  // namespace
}  // namespace slm::model
