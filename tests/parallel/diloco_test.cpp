// tests/parallel/diloco_test.cpp: the pure parts of DiLoCo (parallel/diloco.h) and the codecs of
// what crosses sites (comm/codec.h): the outer Nesterov step against its formula, the staggered
// sync schedule of fragments, fragment ranges of a real layout, and each codec's error bound,
// with error feedback keeping the accumulated error below one step's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/codec.h"
#include "model/gpt2.h"
#include "parallel/diloco.h"
#include "parallel/sync_by_time.h"
#include "util/error.h"

namespace slm::parallel {
namespace {

TEST(Diloco, OuterNesterovMatchesFormula) {
  torch::manual_seed(1);
  at::Tensor theta = torch::randn({7}), m = torch::zeros({7});
  at::Tensor t0 = theta.clone(), m0 = m.clone();
  for (int k = 0; k < 3; ++k) {
    const at::Tensor d = torch::randn({7});
    outer_nesterov(theta, m, d, 0.7, 0.9);
    m0 = 0.9 * m0 + d;                // PyTorch SGD(nesterov=True): buf = mu*buf + g
    t0 = t0 - 0.7 * (d + 0.9 * m0);   // p -= lr * (g + mu*buf)
  }
  EXPECT_TRUE(torch::allclose(theta, t0, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(m, m0, 1e-6, 1e-6));
  at::Tensor th = torch::ones({3}), mm = torch::zeros({3});  // lr 1, momentum 0: theta - delta
  outer_nesterov(th, mm, torch::full({3}, 0.25), 1.0, 0.0);
  EXPECT_TRUE(torch::equal(th, torch::full({3}, 0.75)));
}

TEST(Diloco, SyncScheduleIsStaggered) {
  std::vector<int64_t> f0, f1;
  for (int64_t s = 1; s <= 30; ++s) {
    if (sync_due(s, 0, 2, 10)) f0.push_back(s);
    if (sync_due(s, 1, 2, 10)) f1.push_back(s);
  }
  EXPECT_EQ(f0, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(f1, (std::vector<int64_t>{15, 25}));
  EXPECT_TRUE(sync_due(1, 0, 1, 1));
  EXPECT_FALSE(sync_due(0, 0, 1, 1));
}

TEST(Diloco, FragmentRangesFollowBlocks) {
  model::GPT2Config c;
  c.n_layer = 4, c.n_head = 2, c.n_embd = 16, c.block_size = 8, c.vocab_size = 32;
  const FlatLayout l = make_layout(model::named_parameters(model::shapes_only(c)), 1);
  const auto r = fragment_ranges(l, 4, 2);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].first, 0);
  EXPECT_EQ(r[0].second, r[1].first);
  EXPECT_EQ(r[1].second, l.numel);
  const size_t h2 = static_cast<size_t>(std::find(l.names.begin(), l.names.end(), "h.2.ln_1.weight") - l.names.begin());
  EXPECT_EQ(r[1].first, l.offsets[h2]);  // blocks 0-1 (+ embeddings) | blocks 2-3 (+ final LayerNorm)
  EXPECT_THROW(fragment_ranges(l, 4, 3), UserError);
}

TEST(Codec, ErrorBoundsAndFeedback) {
  torch::manual_seed(2);
  const int64_t n = 1000, chunk = 64;
  at::Tensor x = torch::randn({n});
  x.narrow(0, 128, 64).zero_();  // an all-zero chunk decodes to zeros
  for (const std::string c : {"none", "bf16", "int8"}) {
    const at::Tensor b = comm::encode(x, c, chunk);
    EXPECT_EQ(b.numel(), comm::encoded_bytes(c, n, chunk)) << c;
    EXPECT_EQ(b.scalar_type(), at::kByte);
    const at::Tensor y = comm::decode(b, c, n, chunk);
    const double err = (y - x).abs().max().item<double>();
    const double bound = c == "none" ? 0.0 : c == "bf16" ? x.abs().max().item<double>() / 256
                                                         : x.abs().max().item<double>() / 127 / 2 * 1.001;
    EXPECT_LE(err, bound) << c;
    EXPECT_EQ(y.narrow(0, 128, 64).abs().max().item<double>(), 0.0) << c;
  }
  // Error feedback: the decoded values of 50 steps sum to the inputs' sum within one step's error.
  at::Tensor err = torch::zeros({n}), sent = torch::zeros({n}), truth = torch::zeros({n});
  for (int k = 0; k < 50; ++k) {
    const at::Tensor d = torch::randn({n}) * 1e-3 + 1e-5;  // a small steady drift int8 would lose
    truth += d;
    const at::Tensor v = d + err;
    const at::Tensor y = comm::decode(comm::encode(v, "int8", chunk), "int8", n, chunk);
    err = v - y;
    sent += y;
  }
  EXPECT_LE((sent - truth).abs().max().item<double>(), 3e-3 / 127);
}

}  // namespace
}  // namespace slm::parallel

namespace slm::parallel {
namespace {

// sync.by = "time" (parallel/sync_by_time.h): steps per round from speeds, spread over the round,
// and the token weights of the pseudo-gradients.
TEST(SyncByTime, RoundStepsFollowSpeedsWithinTheCap) {
  EXPECT_EQ(round_steps({1, 1}, 4, 4), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(round_steps({1, 2}, 4, 4), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(round_steps({3, 1.5, 1}, 10, 4), (std::vector<int64_t>{30, 15, 10}));
  EXPECT_EQ(round_steps({10, 1}, 4, 4), (std::vector<int64_t>{16, 4}));  // at most 4x
  EXPECT_EQ(round_steps({0.5, 0.6}, 50, 4), (std::vector<int64_t>{50, 60}));
}

TEST(SyncByTime, StepsAreSpreadOverTheRound) {
  for (int64_t n : {4, 5, 7, 8, 13, 16}) {
    std::vector<int64_t> per;
    int64_t sum = 0;
    for (int64_t j = 0; j < 4; ++j) {
      per.push_back(steps_at(n, 4, j));
      sum += per.back();
      EXPECT_EQ(steps_before(n, 4, j + 1), sum);
      EXPECT_GE(per.back(), 1);                        // every site steps at every global step
      EXPECT_LE(per.back(), (n + 3) / 4);              // as even as integers allow
    }
    EXPECT_EQ(sum, n) << n;
  }
  EXPECT_EQ((std::vector<int64_t>{steps_at(6, 4, 0), steps_at(6, 4, 1), steps_at(6, 4, 2), steps_at(6, 4, 3)}),
            (std::vector<int64_t>{1, 2, 1, 2}));
}

TEST(SyncByTime, PseudoGradientsCountByTokens) {
  // Δ = (4 Δ_a + 8 Δ_b) / 12 = (w_a Δ_a + w_b Δ_b) / 2 with w = 2 * share.
  EXPECT_DOUBLE_EQ(delta_weight({4, 8}, 0), 2.0 * 4 / 12);
  EXPECT_DOUBLE_EQ(delta_weight({4, 8}, 1), 2.0 * 8 / 12);
  EXPECT_DOUBLE_EQ(delta_weight({5, 5, 5}, 2), 1.0);
  EXPECT_DOUBLE_EQ(delta_weight({0, 0}, 1), 1.0);
  double sum = 0;
  for (int s = 0; s < 3; ++s) sum += delta_weight({3, 9, 12}, s);
  EXPECT_DOUBLE_EQ(sum, 3.0);  // the weights keep the mean's scale
}

TEST(SyncByTime, SiteSpeedsParse) {
  EXPECT_EQ(parse_site_speeds("1,2.5"), (std::vector<double>{1, 2.5}));
  EXPECT_EQ(parse_site_speeds(" 3 , 1"), (std::vector<double>{3, 1}));
  for (const char* bad : {"", "1,,2", "1,0", "a", "1,-2", "1,2x", "nan", "1e999"})
    EXPECT_THROW(parse_site_speeds(bad), UserError) << bad;
}

}  // namespace
}  // namespace slm::parallel
