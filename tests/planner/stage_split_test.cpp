// tests/planner/stage_split_test.cpp: the stage split DP: a slower stage gets fewer layers, a
// memory-capped stage at most what fits, nothing when nothing fits.
#include <gtest/gtest.h>

#include <limits>

#include "planner/stage_split.h"

namespace slm::planner {
namespace {

TEST(StageSplit, SlowerStageGetsFewerLayers) {
  // Stage 1 is three times slower per layer: 18 + 6 balances 18 = 3 x 6.
  auto cost = [](int s, int64_t a, int64_t e) { return static_cast<double>(e - a) * (s == 1 ? 3.0 : 1.0); };
  EXPECT_EQ(split_layers(24, 2, cost), (std::vector<int64_t>{0, 18, 24}));
  EXPECT_EQ(split_layers(24, 3, [](int, int64_t a, int64_t e) { return double(e - a); }),
            (std::vector<int64_t>{0, 8, 16, 24}));
  // A stage that cannot hold more than 4 layers.
  auto capped = [](int s, int64_t a, int64_t e) {
    return s == 0 && e - a > 4 ? std::numeric_limits<double>::infinity() : double(e - a);
  };
  EXPECT_EQ(split_layers(12, 2, capped), (std::vector<int64_t>{0, 4, 12}));
  EXPECT_TRUE(split_layers(12, 2, [](int, int64_t, int64_t) { return std::numeric_limits<double>::infinity(); }).empty());
  EXPECT_TRUE(split_layers(2, 3, [](int, int64_t, int64_t) { return 1.0; }).empty());
}

}  // namespace
}  // namespace slm::planner
