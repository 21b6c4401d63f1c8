// tests/train/optim_test.cpp: AdamW's fused path (LibTorch's kernel, used on GPUs) and the chunked
// arithmetic give the same parameters and moments, with weight decay on the listed ranges only;
// runs on the CPU where this LibTorch has the fused kernel there (2.4+), else skips.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "train/optim.h"
#include "util/torch_compat.h"

namespace slm::train {
namespace {

TEST(AdamW, FusedEqualsChunked) {
  if (!compat::kHasFusedAdam) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no fused AdamW on the CPU";
  torch::manual_seed(3);
  const int64_t n = 200003;  // several chunks and a ragged end
  AdamW a, b;
  for (AdamW* x : {&a, &b}) {
    x->exp_avg = torch::zeros({n});
    x->exp_avg_sq = torch::zeros({n});
    x->scratch = torch::empty({1 << 16});
    x->decay = {{0, 1000}, {5000, 150000}};
  }
  at::Tensor p1 = torch::randn({n}), p2 = p1.clone();
  OptimConfig o;
  o.weight_decay = 0.1;
  for (int step = 0; step < 3; ++step) {
    const at::Tensor g = torch::randn({n});
    adamw_step(a, p1, g, o, 1e-2, false);
    adamw_step(b, p2, g, o, 1e-2, true);
  }
  EXPECT_TRUE(torch::allclose(p1, p2, 1e-6, 1e-7)) << (p1 - p2).abs().max().item<double>();
  // the fused kernel updates the moments by lerp: the same values to rounding
  EXPECT_TRUE(torch::allclose(a.exp_avg, b.exp_avg, 1e-5, 1e-7)) << (a.exp_avg - b.exp_avg).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(a.exp_avg_sq, b.exp_avg_sq, 1e-5, 1e-9));
}

}  // namespace
}  // namespace slm::train
