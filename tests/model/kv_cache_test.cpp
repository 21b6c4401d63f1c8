// tests/model/kv_cache_test.cpp: decoding with cached keys and values gives forward_logits's logits
// position by position, and generate (which uses it) the tokens a full recompute per token gives,
// also once the context is longer than block_size.
#include "model/kv_cache.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "model/generate.h"

namespace slm::model {

static GPT2 small_model() {
  GPT2Config c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.block_size = 16, c.vocab_size = 50;
  GPT2 m = init_gpt2(c, 3);
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);  // the same model whichever tests ran before in this process
  for (auto& [name, p] : named_parameters(m)) p.add_(torch::randn_like(p) * 0.5);  // biases and LayerNorms too
  return m;
}

TEST(KvCache, LogitsEqualTheWholeContextsPositionByPosition) {
  const GPT2 m = small_model();
  torch::manual_seed(5);
  const at::Tensor idx = torch::randint(50, {1, 16}, torch::kLong);
  const at::Tensor want = forward_logits(m, idx, false);  // (1, 16, 50)
  KvCache cache;
  at::Tensor got = forward_cached(m, cache, idx.narrow(1, 0, 6));    // a prompt of 6, then one at a time
  const auto close = [](const at::Tensor& a, const at::Tensor& b) {  // fp32: the order of the sums differs
    return (a - b).abs().max().item<double>() <= 1e-5 * b.abs().max().item<double>();
  };
  EXPECT_TRUE(close(got, want[0][5])) << (got - want[0][5]).abs().max().item<double>();
  for (int64_t p = 6; p < 16; ++p) {
    got = forward_cached(m, cache, idx.narrow(1, p, 1));
    EXPECT_TRUE(close(got, want[0][p])) << "position " << p << ": " << (got - want[0][p]).abs().max().item<double>();
  }
  EXPECT_EQ(cache.len, 16);
  EXPECT_EQ(cache.k[1].sizes(), (std::vector<int64_t>{1, 4, 16, 8}));
}

// The tokens of a greedy full recompute per token, the window cropped to block_size.
static std::vector<int64_t> greedy_recompute(const GPT2& m, std::vector<int64_t> ctx, int64_t n) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(ctx.size()) - m.cfg.block_size);
    const std::vector<int64_t> window(ctx.begin() + start, ctx.end());
    const at::Tensor idx = torch::tensor(window, torch::kLong).view({1, -1});
    out.push_back(forward_logits(m, idx, false)[0][-1].argmax().item<int64_t>());
    ctx.push_back(out.back());
  }
  return out;
}

TEST(KvCache, GenerateGivesTheTokensOfAFullRecomputePastBlockSize) {
  const GPT2 m = small_model();
  SampleOptions o;
  o.max_new_tokens = 30, o.temperature = 0;  // 5 + 30 tokens: past block_size 16 after 11
  std::set<int64_t> seen;  // greedy decoding of a random model may settle on a few tokens: several prompts
  for (const std::vector<int64_t>& prompt : {std::vector<int64_t>{1, 7, 3, 9, 2}, std::vector<int64_t>{40, 11, 26},
                                             std::vector<int64_t>{5, 5, 48, 17, 33, 0, 21}, std::vector<int64_t>{29}}) {
    const std::vector<int64_t> want = greedy_recompute(m, prompt, 30), got = generate(m, prompt, o);
    EXPECT_EQ(got, want);
    seen.insert(want.begin(), want.end());
  }
  EXPECT_GT(seen.size(), 8u);  // not a few tokens over and over (16 of the 50 here)
}

}  // namespace slm::model
