// tests/model/gpt2_test.cpp: the GPT-2 model: shapes, parameter count of the real GPT-2, loss at
// initialisation, gradients against finite differences (double precision), fitting one batch.
#include "model/gpt2.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "util/error.h"

namespace slm::model {

static GPT2Config tiny(int64_t V = 300) {
  GPT2Config c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 32, c.block_size = 16, c.vocab_size = V;
  return c;
}

TEST(GPT2, ShapesAndNames) {
  GPT2 m = init_gpt2(tiny(), 1);
  EXPECT_EQ(m.wte.sizes(), (std::vector<int64_t>{384, 32}));  // 300 padded to 128s
  at::Tensor idx = torch::randint(300, {3, 16}, torch::kLong);
  EXPECT_EQ(forward_logits(m, idx, false).sizes(), (std::vector<int64_t>{3, 16, 300}));
  auto named = named_parameters(m);
  EXPECT_EQ(named.front().first, "wte.weight");
  EXPECT_EQ(named[2].first, "h.0.ln_1.weight");
  EXPECT_EQ(named[4].first, "h.0.attn.c_attn.weight");
  EXPECT_EQ(named.back().first, "ln_f.bias");
  EXPECT_EQ(named.size(), 2 + 2 * 12 + 2u);
}

TEST(GPT2, RealGpt2ParameterCount) {
  GPT2Config c;
  c.n_layer = 12, c.n_head = 12, c.n_embd = 768, c.block_size = 1024, c.vocab_size = 50257;
  c.vocab_pad = 1;
  EXPECT_EQ(num_parameters(init_gpt2(c, 0)), 124'439'808);  // Hugging Face "gpt2"
}

TEST(GPT2, ValidationErrors) {
  GPT2Config c = tiny();
  c.n_head = 3;
  try {
    validate(c);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "model: n_head 3 must divide n_embd 32");
  }
  c = tiny(0);
  EXPECT_THROW(validate(c), UserError);
}

TEST(GPT2, InitialLossIsNearLogV) {
  GPT2Config c = tiny(1000);
  GPT2 m = init_gpt2(c, 2);
  torch::manual_seed(0);
  at::Tensor idx = torch::randint(1000, {8, 16}, torch::kLong), tgt = torch::randint(1000, {8, 16}, torch::kLong);
  double loss = forward_loss(m, idx, tgt, false).item<double>();
  EXPECT_NEAR(loss, std::log(1000.0), 0.1);
}

TEST(GPT2, DeterministicInit) {
  GPT2 a = init_gpt2(tiny(), 5), b = init_gpt2(tiny(), 5), c = init_gpt2(tiny(), 6);
  EXPECT_TRUE(torch::equal(a.h[1].c_fc_w, b.h[1].c_fc_w));
  EXPECT_FALSE(torch::equal(a.h[1].c_fc_w, c.h[1].c_fc_w));
  // Residual projections use std 0.02 / sqrt(2L).
  GPT2Config big = tiny();
  big.n_embd = 256, big.n_head = 4;
  GPT2 g = init_gpt2(big, 1);
  EXPECT_NEAR(g.h[0].attn_proj_w.std().item<double>(), 0.02 / 2.0, 0.001);
  EXPECT_NEAR(g.h[0].c_attn_w.std().item<double>(), 0.02, 0.001);
}

TEST(GPT2, GradientsMatchFiniteDifferences) {
  GPT2Config c = tiny(50);
  c.n_layer = 1, c.vocab_pad = 1;
  GPT2 m = init_gpt2(c, 3);
  for (auto& [name, p] : named_parameters(m)) {
    torch::NoGradGuard g;
    p.set_data(p.to(torch::kDouble) + 0.05 * torch::randn_like(p, torch::kDouble));  // break symmetry
  }
  torch::manual_seed(1);
  at::Tensor idx = torch::randint(50, {2, 8}, torch::kLong), tgt = torch::randint(50, {2, 8}, torch::kLong);
  at::Tensor loss = forward_loss(m, idx, tgt, false);
  loss.backward();
  const double eps = 1e-6;
  int checked = 0;
  for (auto& [name, p] : named_parameters(m)) {
    at::Tensor flat = p.data().view({-1}), grad = p.grad().view({-1});
    for (int64_t i : {int64_t(0), flat.numel() / 2, flat.numel() - 1}) {
      torch::NoGradGuard g;
      double orig = flat[i].item<double>();
      flat[i] = orig + eps;
      double up = forward_loss(m, idx, tgt, false).item<double>();
      flat[i] = orig - eps;
      double down = forward_loss(m, idx, tgt, false).item<double>();
      flat[i] = orig;
      double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[i].item<double>(), numeric, 1e-6 + 1e-4 * std::abs(numeric)) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 16 * 3);
}

TEST(GPT2, OverfitsOneBatch) {
  GPT2 m = init_gpt2(tiny(64), 4);
  std::vector<at::Tensor> params;
  for (auto& [n, p] : named_parameters(m)) params.push_back(p);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(3e-3));
  torch::manual_seed(2);
  at::Tensor idx = torch::randint(64, {4, 16}, torch::kLong), tgt = torch::randint(64, {4, 16}, torch::kLong);
  double loss = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    at::Tensor l = forward_loss(m, idx, tgt, true);
    l.backward();
    opt.step();
    loss = l.item<double>();
  }
  EXPECT_LT(loss, 0.1);
}

}  // namespace slm::model

namespace slm::model {

// Recomputation changes memory, not math: same loss and gradients as the stored-activation path.
TEST(GPT2, RecomputeGivesTheSameGradients) {
  GPT2Config c = tiny(100);
  GPT2 a = init_gpt2(c, 9);
  c.recompute = true;
  GPT2 b = init_gpt2(c, 9);
  torch::manual_seed(3);
  at::Tensor idx = torch::randint(100, {2, 16}, torch::kLong), tgt = torch::randint(100, {2, 16}, torch::kLong);
  at::Tensor la = forward_loss(a, idx, tgt, true), lb = forward_loss(b, idx, tgt, true);
  la.backward();
  lb.backward();
  EXPECT_EQ(la.item<double>(), lb.item<double>());
  auto pa = named_parameters(a), pb = named_parameters(b);
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_TRUE(pb[i].second.grad().defined()) << pb[i].first;
    EXPECT_TRUE(torch::allclose(pa[i].second.grad(), pb[i].second.grad(), 1e-5, 1e-7)) << pa[i].first;
  }
  c.dropout = 0.1;
  EXPECT_THROW(validate(c), UserError);
}

// run_blocks leaves each block's residual add to the LayerNorm that follows it (add_layer_norm.h:
// one kernel each way on GPUs and AVX-512 CPUs, ATen's add and layer_norm elsewhere); the result is
// block_forward's, chained, to the bit, and so is its gradient.
TEST(GPT2, DeferredResidualAddsEqualChainedBlocks) {
  GPT2Config c = tiny(100);
  c.n_layer = 3;
  GPT2 m = init_gpt2(c, 4);
  torch::manual_seed(5);
  at::Tensor x = torch::randn({2, 16, 32}).requires_grad_(true), x2 = x.detach().clone().requires_grad_(true);
  at::Tensor deferred = run_blocks(m, x, 0, 3, true), chained = x2;
  for (size_t i = 0; i < 3; ++i) chained = block_forward(m.h[i], chained, c, true);
  EXPECT_TRUE(torch::equal(deferred, chained));
  deferred.pow(2).sum().backward();
  chained.pow(2).sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), x2.grad()));
}

}  // namespace slm::model
