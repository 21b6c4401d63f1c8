// tests/train/optim_test.cpp: AdamW's three ways of computing an update give the same parameters
// and moments, with weight decay on the listed ranges only: slm's one-pass CPU loop (the CPU
// default) against the chunked ATen ops, and LibTorch's fused kernel (used on GPUs) against the
// chunked ops where this LibTorch has it on the CPU (2.4+). The one-pass loop gives bit-identical
// results however the buffer is split (ZeRO shards, thread counts).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "train/optim.h"
#include "util/torch_compat.h"

namespace slm::train {
namespace {

constexpr int64_t kN = 200003;  // several chunks and a ragged end

AdamW moments(int64_t n, std::vector<std::pair<int64_t, int64_t>> decay) {
  AdamW a;
  a.exp_avg = torch::zeros({n});
  a.exp_avg_sq = torch::zeros({n});
  a.scratch = torch::empty({1 << 16});
  a.decay = std::move(decay);
  return a;
}

// Three steps of both kernels from the same start; returns both parameter tensors.
std::pair<at::Tensor, at::Tensor> expect_same_updates(AdamKernel x, AdamKernel y, double rtol_moments) {
  torch::manual_seed(3);
  AdamW a = moments(kN, {{0, 1000}, {5000, 150000}}), b = moments(kN, {{0, 1000}, {5000, 150000}});
  at::Tensor p1 = torch::randn({kN}), p2 = p1.clone();
  const at::Tensor p0 = p1.clone();
  OptimConfig o;
  o.weight_decay = 0.1;
  for (int step = 0; step < 3; ++step) {
    const at::Tensor g = torch::randn({kN});
    adamw_step(a, p1, g, o, 1e-2, x);
    adamw_step(b, p2, g, o, 1e-2, y);
  }
  EXPECT_GT((p1 - p0).abs().min().item<double>(), 0) << "every parameter moved";
  EXPECT_TRUE(torch::allclose(p1, p2, 1e-6, 1e-7)) << (p1 - p2).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(a.exp_avg, b.exp_avg, rtol_moments, 1e-7)) << (a.exp_avg - b.exp_avg).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(a.exp_avg_sq, b.exp_avg_sq, rtol_moments, 1e-9));
  return {p1, p2};
}

TEST(AdamW, FusedEqualsChunked) {
  if (!compat::kHasFusedAdam) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no fused AdamW on the CPU";
  expect_same_updates(AdamKernel::chunked, AdamKernel::libtorch_fused, 1e-5);  // it updates the moments by lerp
}

// The fused kernel with the learning rate and the step count read from tensors (what a CUDA graph
// replays) gives the scalar arguments' update bit for bit, the learning rate rounded to fp32 as
// the tensor holds it; the step count stays the caller's.
TEST(AdamW, ByTensorsEqualsScalarArguments) {
  if (!compat::kHasFusedAdam) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no fused AdamW on the CPU";
  torch::manual_seed(4);
  AdamW a = moments(kN, {{0, 1000}, {5000, 150000}}), b = moments(kN, {{0, 1000}, {5000, 150000}});
  at::Tensor p1 = torch::randn({kN}), p2 = p1.clone();
  OptimConfig o;
  o.weight_decay = 0.1;
  const at::Tensor lr = torch::zeros({}), step = torch::zeros({});
  for (double rate : {1e-2, 3e-3, 7e-4}) {
    const at::Tensor g = torch::randn({kN});
    const double rate32 = static_cast<double>(static_cast<float>(rate));
    adamw_step(a, p1, g, o, rate32, AdamKernel::libtorch_fused);
    lr.fill_(rate), step.fill_(static_cast<double>(a.step));
    adamw_step_by_tensors(b, p2, g, o, lr, step);
  }
  EXPECT_TRUE(torch::equal(p1, p2)) << (p1 - p2).abs().max().item<double>();
  EXPECT_TRUE(torch::equal(a.exp_avg, b.exp_avg));
  EXPECT_TRUE(torch::equal(a.exp_avg_sq, b.exp_avg_sq));
  EXPECT_EQ(b.step, 0);
  OptimConfig sgd;
  sgd.name = "sgd";
  EXPECT_THROW(adamw_step_by_tensors(b, p2, p2, sgd, lr, step), std::logic_error);
}

TEST(AdamW, OnePassEqualsChunked) {
  expect_same_updates(AdamKernel::chunked, AdamKernel::one_pass, 1e-6);
  auto [automatic, one_pass] = expect_same_updates(AdamKernel::automatic, AdamKernel::one_pass, 0);
  EXPECT_TRUE(torch::equal(automatic, one_pass)) << "the CPU's default is the one-pass loop";
}

TEST(AdamW, OnePassDecaysOnlyListedRanges) {
  AdamW a = moments(4, {{1, 3}});
  at::Tensor p = torch::ones({4});
  OptimConfig o;
  o.weight_decay = 0.5;
  adamw_step(a, p, torch::zeros({4}), o, 0.1, AdamKernel::one_pass);  // zero gradient: only the decay moves p
  EXPECT_TRUE(torch::equal(p, torch::tensor({1.0f, 0.95f, 0.95f, 1.0f}))) << p;
}

// ZeRO updates each rank's shard with its own decay ranges; the result must be the whole buffer's
// update bit for bit, on one thread or several.
TEST(AdamW, OnePassIsTheSameHoweverSplit) {
  torch::manual_seed(5);
  const int64_t cut = 77777;
  AdamW whole = moments(kN, {{0, 1000}, {5000, 150000}});
  AdamW lo = moments(cut, {{0, 1000}, {5000, cut}}), hi = moments(kN - cut, {{0, 150000 - cut}});
  at::Tensor p = torch::randn({kN}), q = p.clone();
  OptimConfig o;
  o.weight_decay = 0.1;
  const int threads = at::get_num_threads();
  for (int step = 0; step < 3; ++step) {
    const at::Tensor g = torch::randn({kN});
    at::set_num_threads(1 + step % 2);
    adamw_step(whole, p, g, o, 1e-2, AdamKernel::one_pass);
    at::set_num_threads(threads);
    at::Tensor q_lo = q.narrow(0, 0, cut), q_hi = q.narrow(0, cut, kN - cut);  // contiguous views
    adamw_step(lo, q_lo, g.narrow(0, 0, cut), o, 1e-2, AdamKernel::one_pass);
    adamw_step(hi, q_hi, g.narrow(0, cut, kN - cut), o, 1e-2, AdamKernel::one_pass);
  }
  EXPECT_TRUE(torch::equal(p, q));
  EXPECT_TRUE(torch::equal(whole.exp_avg, torch::cat({lo.exp_avg, hi.exp_avg})));
  EXPECT_TRUE(torch::equal(whole.exp_avg_sq, torch::cat({lo.exp_avg_sq, hi.exp_avg_sq})));
}

TEST(GradClip, LimitsBeyondFloatsRangeDoNotClip) {
  EXPECT_TRUE(clips_float_norm(1.0));
  EXPECT_TRUE(clips_float_norm(1e38));
  EXPECT_FALSE(clips_float_norm(0));  // off
  EXPECT_FALSE(clips_float_norm(-1));
  EXPECT_FALSE(clips_float_norm(1e39));  // no float norm exceeds it, and LibTorch will not convert it
  EXPECT_FALSE(clips_float_norm(1e308));
  EXPECT_FALSE(clips_float_norm(std::nan("")));
}

}  // namespace
}  // namespace slm::train
