// tests/train/device_update_test.cpp: the step's end on the device (train/device_update.h) does
// what the host path does: the same clip and the same AdamW update, and a non-finite norm leaves
// parameters and moments as they were, decided without the host reading anything. On CPU tensors,
// with LibTorch's fused AdamW (2.4+; skipped with Debian's 1.13); where it applies, on any build.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "train/device_update.h"
#include "util/error.h"
#include "util/torch_compat.h"

namespace slm::train {
namespace {

constexpr int64_t kN = 10007;

AdamW moments(int64_t n) {
  AdamW a;
  a.exp_avg = torch::zeros({n});
  a.exp_avg_sq = torch::zeros({n});
  a.scratch = torch::empty({n});
  a.decay = {{0, 100}, {5000, 9000}};
  return a;
}

OptimConfig config(double clip) {
  OptimConfig o;
  o.weight_decay = 0.1;
  o.grad_clip = clip;
  return o;
}

TEST(DeviceUpdate, AppliesOnCudaWithFusedAdamW) {
  std::string why;
  EXPECT_FALSE(device_update_applies("auto", "cpu", "adamw", &why));
  EXPECT_FALSE(device_update_applies("off", "cuda", "adamw", &why));
  EXPECT_EQ(device_update_applies("auto", "cuda", "adamw", &why), compat::kHasFusedAdam);
  if (!compat::kHasFusedAdam) {
    EXPECT_NE(why.find("fused AdamW"), std::string::npos) << why;
  }
  why.clear();
  EXPECT_FALSE(device_update_applies("auto", "cuda", "sgd", &why));
  EXPECT_NE(why.find("AdamW"), std::string::npos) << why;
  EXPECT_THROW(device_update_applies("on", "cpu", "sgd", &why), UserError);
  EXPECT_EQ(compat::kHasFusedAdam && device_update_applies("on", "cpu", "adamw", &why), compat::kHasFusedAdam);
}

// Three steps, the gradient's norm above the clip, then below it: the device path gives the host
// path's parameters and moments bit for bit (the same fused kernel, the same clip factor).
TEST(DeviceUpdate, ClipsAndUpdatesAsTheHostPath) {
  if (!compat::kHasFusedAdam) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no fused AdamW";
  torch::manual_seed(11);
  AdamW host = moments(kN), dev = moments(kN);
  at::Tensor p_host = torch::randn({kN}), p_dev = p_host.clone();
  const OptimConfig o = config(1.0);
  for (double size : {30.0, 5.0, 0.001}) {
    const at::Tensor g = torch::randn({kN}) * (size / std::sqrt(static_cast<double>(kN)));
    at::Tensor g_host = g.clone(), g_dev = g.clone();
    const at::Tensor norm_sq = g.to(at::kDouble).pow(2).sum();
    const double norm = std::sqrt(norm_sq.item<double>());
    if (norm > o.grad_clip) g_host.mul_(o.grad_clip / (norm + 1e-6));
    adamw_step(host, p_host, g_host, o, 1e-2, AdamKernel::libtorch_fused);
    const at::Tensor skipped = clip_and_update(dev, p_dev, g_dev, norm_sq, o, 1e-2);
    EXPECT_EQ(skipped.item<float>(), 0.0f);
    EXPECT_TRUE(torch::equal(g_host, g_dev)) << "norm " << norm << ": the clipped gradients differ";
  }
  EXPECT_TRUE(torch::equal(p_host, p_dev)) << (p_host - p_dev).abs().max().item<double>();
  EXPECT_TRUE(torch::equal(host.exp_avg, dev.exp_avg));
  EXPECT_TRUE(torch::equal(host.exp_avg_sq, dev.exp_avg_sq));
  EXPECT_EQ(host.step, dev.step);
}

// An overflow (inf or NaN in the gradients): the flag is 1 and nothing moved, the decay included.
TEST(DeviceUpdate, SkipsANonFiniteNormOnTheDevice) {
  if (!compat::kHasFusedAdam) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no fused AdamW";
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    torch::manual_seed(12);
    AdamW a = moments(kN);
    at::Tensor p = torch::randn({kN});
    adamw_step(a, p, torch::randn({kN}), config(1.0), 1e-2);  // moments that are not zero
    const at::Tensor p0 = p.clone(), m0 = a.exp_avg.clone(), v0 = a.exp_avg_sq.clone();
    at::Tensor g = torch::randn({kN});
    g[77] = bad;
    const at::Tensor skipped = clip_and_update(a, p, g, g.to(at::kDouble).pow(2).sum(), config(1.0), 1e-2);
    EXPECT_EQ(skipped.item<float>(), 1.0f) << bad;
    EXPECT_TRUE(torch::equal(p, p0)) << bad;
    EXPECT_TRUE(torch::equal(a.exp_avg, m0)) << bad;
    EXPECT_TRUE(torch::equal(a.exp_avg_sq, v0)) << bad;
    EXPECT_EQ(a.step, 2) << "counted; the caller takes it back when it reads the flag";
  }
}

// The update reading its learning rate and number from device tensors (as eagerly as from a CUDA
// graph) clips and updates as the scalar form at the fp32-rounded rate; it leaves a.step to the
// caller, and skips a non-finite norm the same way.
TEST(DeviceUpdate, ScalarsOnTheDeviceGiveTheSameUpdate) {
  if (!compat::kHasFusedAdam) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no fused AdamW";
  torch::manual_seed(13);
  AdamW host = moments(kN), dev = moments(kN);
  at::Tensor p_host = torch::randn({kN}), p_dev = p_host.clone();
  UpdateScalars s = make_update_scalars(p_dev);
  EXPECT_EQ(s.lr.scalar_type(), at::kFloat);
  EXPECT_EQ(s.lr.dim(), 0);
  for (double size : {30.0, 0.001, std::numeric_limits<double>::infinity()}) {
    at::Tensor g = torch::randn({kN}) * (size / std::sqrt(static_cast<double>(kN)));
    if (std::isinf(size)) g = torch::randn({kN}), g[5] = size;
    at::Tensor g_dev = g.clone();
    const at::Tensor norm_sq = g.to(at::kDouble).pow(2).sum();
    const double lr = 2e-2 / (1 + dev.step);
    const at::Tensor a = clip_and_update(host, p_host, g, norm_sq, config(1.0), static_cast<float>(lr));
    dev.step += 1;
    set_update_scalars(s, lr, dev.step);
    const at::Tensor b = clip_and_update(dev, p_dev, g_dev, norm_sq, config(1.0), s);
    EXPECT_EQ(a.item<float>(), b.item<float>()) << size;
    if (a.item<float>() != 0) host.step -= 1, dev.step -= 1;
    EXPECT_TRUE(!std::isfinite(size) || torch::equal(g, g_dev)) << size;  // not finite: NaN times the factor
  }
  EXPECT_EQ(host.step, 2);
  EXPECT_EQ(dev.step, 2);
  EXPECT_EQ(s.step.item<float>(), 3.0f) << "the skipped update's number, written before it";
  EXPECT_TRUE(torch::equal(p_host, p_dev)) << (p_host - p_dev).abs().max().item<double>();
  EXPECT_TRUE(torch::equal(host.exp_avg, dev.exp_avg));
  EXPECT_TRUE(torch::equal(host.exp_avg_sq, dev.exp_avg_sq));
}

// The loss's factor and the unscaling read from device tensors (a CUDA graph replays them with
// each step's values) give the gradients the host path's numbers give, bit for bit, for fp32 and
// bf16 losses; a factor beyond fp32's range (loss scale 1e39) is inf in both.
TEST(DeviceUpdate, LossScalarsOnTheDeviceScaleAsTheNumbersDo) {
  UpdateScalars s = make_update_scalars(torch::zeros({1}));
  EXPECT_EQ(s.loss_factor.item<float>(), 1.0f);
  EXPECT_EQ(s.unscale.item<float>(), 1.0f);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16})
    for (const auto& [factor, unscale] : std::vector<std::pair<double, double>>{{65536.0 / 3.0, 1.0 / 65536.0},
                                                                               {1e39, 1e-39}, {0.3, 1.0}}) {
      set_update_scalars(s, 1e-3, 1, factor, unscale);
      const auto grad_of = [&](bool on_device) {
        const at::Tensor w = torch::full({3}, 0.7, at::dtype(dtype).requires_grad(true));
        const at::Tensor loss = (w * w).sum();
        (on_device ? loss * s.loss_factor : loss * factor).backward();
        at::Tensor g = w.grad().to(at::kFloat);
        return on_device ? g.mul_(s.unscale) : g.mul_(unscale);
      };
      const at::Tensor a = grad_of(false), b = grad_of(true);
      EXPECT_TRUE(torch::equal(a, b)) << factor << " " << dtype << ": " << a << " " << b;
      EXPECT_EQ(factor > std::numeric_limits<float>::max(), std::isinf(b[0].item<float>())) << factor;
    }
}

TEST(DeviceUpdate, ReadsLossAndNormInOneGo) {
  const at::Tensor norm_sq = torch::tensor({6.25}, at::kDouble);
  EXPECT_EQ(read_back(torch::tensor(3.5, at::kDouble), norm_sq), std::make_pair(3.5, 6.25));
  EXPECT_EQ(read_back(at::Tensor(), norm_sq.reshape({})), std::make_pair(0.0, 6.25));
}

}  // namespace
}  // namespace slm::train
