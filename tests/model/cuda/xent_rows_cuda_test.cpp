// tests/model/cuda/xent_rows_cuda_test.cpp: the CUDA softmax cross-entropy kernel
// (model/cuda/xent_rows.cu) against the ATen composition it replaces (log_softmax in double, exp,
// scatter of -1), forward and gradient, in fp32, bf16 and fp16, row lengths that are not multiples
// of anything (1, 37, 1000, 50257 of a padded 50304), padded columns, targets at both ends, and the
// fused head on the GPU against linear + cross_entropy. Runs wherever a GPU is; skipped elsewhere
// (and in a build without the own CUDA kernels).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/cuda/cuda_test_util.h"
#include "model/fused_head.h"
#include "model/xent_rows.h"

namespace slm::model {
namespace {

struct Case {
  int64_t rows, V, width;
  at::ScalarType dt;
  double loss_tol, grad_tol;
};

TEST(CudaXentRows, MatchesTheAtenComposition) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
  torch::manual_seed(11);
  const auto dev = torch::Device(torch::kCUDA);
  for (const Case& c : {Case{5, 1, 1, at::kFloat, 1e-5, 1e-6}, Case{7, 37, 48, at::kFloat, 1e-5, 1e-6},
                        Case{9, 1000, 1000, at::kBFloat16, 1e-4, 4e-3}, Case{9, 1000, 1024, at::kHalf, 1e-4, 1e-3},
                        Case{3, 50257, 50304, at::kBFloat16, 1e-4, 4e-3}}) {
    at::Tensor logits = (torch::randn({c.rows, c.width}, dev) * 6 + 30).to(c.dt);  // a large shift: the max matters
    at::Tensor t = torch::randint(c.V, {c.rows}, torch::dtype(torch::kLong).device(dev));
    t[0] = 0, t[c.rows - 1] = c.V - 1;
    const at::Tensor real = logits.narrow(1, 0, c.V).to(at::kDouble);  // the rounded logits, in double
    const at::Tensor logp = at::log_softmax(real, 1);
    const at::Tensor ref_loss = -logp.gather(1, t.unsqueeze(1)).squeeze(1);
    const at::Tensor ref_grad = logp.exp().scatter_add(1, t.unsqueeze(1), -at::ones({c.rows, 1}, real.options()));
    ASSERT_TRUE(xent_rows_supported(logits, c.V));
    at::Tensor g = logits.clone();
    const at::Tensor loss = xent_rows(g, t, /*grad=*/false, c.V);
    EXPECT_TRUE(at::equal(g, logits)) << "no gradient asked: the logits stay";
    EXPECT_TRUE(at::allclose(loss.to(at::kDouble), ref_loss, c.loss_tol, c.loss_tol)) << c.V;
    const at::Tensor loss2 = xent_rows(g, t, /*grad=*/true, c.V);
    EXPECT_TRUE(at::equal(loss2, loss)) << c.V;
    EXPECT_LT((g.narrow(1, 0, c.V).to(at::kDouble) - ref_grad).abs().max().item<double>(), c.grad_tol) << c.V;
    if (c.width > c.V) {
      EXPECT_EQ(g.narrow(1, c.V, c.width - c.V).abs().max().item<double>(), 0.0) << c.V;
    }
  }
  // A target outside [0, V): NaN, without a host sync to check it.
  at::Tensor logits = torch::randn({2, 5}, dev);
  const at::Tensor loss = xent_rows(logits, torch::tensor({0, 5}, torch::kLong).to(dev), false, 5);
  EXPECT_FALSE(std::isnan(loss[0].item<double>()));
  EXPECT_TRUE(std::isnan(loss[1].item<double>()));
}

// The fused head on the GPU (the kernel over the padded width) against linear + cross_entropy in
// fp32: loss and both gradients; the padding rows of w get none.
TEST(CudaXentRows, FusedHeadMatchesLinearCrossEntropy) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
  torch::manual_seed(12);
  const auto opt = torch::dtype(torch::kFloat).device(torch::kCUDA);
  const int64_t N = 37, C = 24, V = 101, Vp = 128;
  at::Tensor x = torch::randn({N, C}, opt).requires_grad_(true), w = (torch::randn({Vp, C}, opt) * 0.5).requires_grad_(true);
  at::Tensor t = torch::randint(V, {N}, torch::dtype(torch::kLong).device(torch::kCUDA));
  at::Tensor loss = fused_linear_cross_entropy(x, w, V, t);
  loss.backward();
  const at::Tensor dx = x.grad().clone(), dw = w.grad().clone();
  x.mutable_grad().reset(), w.mutable_grad().reset();
  at::Tensor ref = at::cross_entropy_loss(at::linear(x, w.narrow(0, 0, V)), t);
  ref.backward();
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-5);
  EXPECT_TRUE(at::allclose(dx, x.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(dw, w.grad(), 1e-5, 1e-6));
  EXPECT_EQ(dw.narrow(0, V, Vp - V).abs().max().item<double>(), 0.0);
}

}  // namespace
}  // namespace slm::model
