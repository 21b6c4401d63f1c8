// tests/embed/pooling_test.cpp: mean, last and weighted-mean pooling on hand-made hidden states:
// padding and the leading end-of-text position are ignored, rows come back unit length.
#include "embed/pooling.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "util/error.h"

namespace slm::embed {
namespace {

TEST(Pooling, MeanLastWeightedIgnorePaddingAndEot) {
  // Row 0: 3 real positions (eot, a, b), then padding; row 1: 2 real positions.
  at::Tensor h = torch::full({2, 4, 2}, 100.0);
  h[0][1] = torch::tensor({1.0, 0.0});
  h[0][2] = torch::tensor({0.0, 1.0});
  h[1][1] = torch::tensor({3.0, 4.0});
  const std::vector<int64_t> len = {3, 2};
  const at::Tensor mean = pool(h, len, Pooling::kMean), last = pool(h, len, Pooling::kLast),
                   weighted = pool(h, len, Pooling::kWeightedMean);
  const double r = 1 / std::sqrt(2.0);
  EXPECT_TRUE(mean[0].allclose(torch::tensor({r, r}).to(torch::kFloat)));
  EXPECT_TRUE(last[0].allclose(torch::tensor({0.0f, 1.0f})));
  // weights 1 and 2 on a and b: (1, 2) / sqrt(5)
  EXPECT_TRUE(weighted[0].allclose(torch::tensor({1 / std::sqrt(5.0), 2 / std::sqrt(5.0)}).to(torch::kFloat)));
  for (const at::Tensor& t : {mean, last, weighted}) EXPECT_TRUE(t[1].allclose(torch::tensor({0.6f, 0.8f})));
  EXPECT_EQ(pooling_name(parse_pooling("weighted-mean")), "weighted-mean");
  EXPECT_THROW(parse_pooling("max"), UserError);
}

}  // namespace
}  // namespace slm::embed
