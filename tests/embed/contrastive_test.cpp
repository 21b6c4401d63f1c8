// tests/embed/contrastive_test.cpp: the InfoNCE loss (embed/contrastive.h) against a direct
// computation, its accuracy, its gradient direction, and gather_rows on one process.
#include "embed/contrastive.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "comm/group.h"
#include "parallel/batch_gather.h"

namespace slm::embed {
namespace {

at::Tensor unit_rows(int64_t n, int64_t c, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::functional::normalize(torch::randn({n, c}, torch::kDouble),
                                          torch::nn::functional::NormalizeFuncOptions().dim(1)).to(torch::kFloat);
}

TEST(InfoNce, EqualsDirectComputation) {
  const at::Tensor a = unit_rows(5, 8, 1), p = unit_rows(5, 8, 2);
  const double tau = 0.1;
  double want = 0;
  auto A = a.to(torch::kDouble), P = p.to(torch::kDouble);
  for (int64_t i = 0; i < 5; ++i) {
    double row = 0, col = 0;
    for (int64_t j = 0; j < 5; ++j) {
      row += std::exp(A[i].dot(P[j]).item<double>() / tau);
      col += std::exp(P[i].dot(A[j]).item<double>() / tau);
    }
    const double own = A[i].dot(P[i]).item<double>() / tau;
    want += (std::log(row) - own) + (std::log(col) - own);
  }
  want /= 10;
  EXPECT_NEAR(info_nce(a, p, tau).loss.item<double>(), want, 1e-5);
}

TEST(InfoNce, AlignedPairsScoreHighAndLowLoss) {
  const at::Tensor a = unit_rows(16, 32, 3);
  const ContrastiveLoss same = info_nce(a, a, 0.05);
  EXPECT_DOUBLE_EQ(same.accuracy, 1.0);
  const ContrastiveLoss shuffled = info_nce(a, a.roll(1, 0), 0.05);
  EXPECT_LT(shuffled.accuracy, 0.2);
  EXPECT_LT(same.loss.item<double>(), 0.1);
  EXPECT_GT(shuffled.loss.item<double>(), std::log(16.0));
}

TEST(InfoNce, GradientPullsPairsTogether) {
  at::Tensor a = unit_rows(8, 16, 4).requires_grad_(true);
  const at::Tensor p = unit_rows(8, 16, 5);
  info_nce(a, p, 0.1).loss.backward();
  // A small step against the gradient raises each anchor's similarity to its own positive.
  const at::Tensor moved = a.detach() - 0.01 * a.grad();
  EXPECT_GT((moved * p).sum(1).sum().item<double>(), (a.detach() * p).sum(1).sum().item<double>());
}

TEST(GatherRows, IdentityOnOneProcess) {
  comm::Group one;
  at::Tensor x = torch::randn({3, 4}, torch::requires_grad());
  at::Tensor y = parallel::gather_rows(x, one);
  EXPECT_TRUE(torch::equal(x, y));
  y.sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), torch::ones({3, 4})));
}

}  // namespace
}  // namespace slm::embed
