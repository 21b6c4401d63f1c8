// tests/data/batch_tensor_test.cpp: a Batch seen as (B, T) int64 LibTorch tensors.
#include "data/batch_tensor.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace slm::data {

TEST(BatchTensor, ShapesValuesNoCopy) {
  Batch b;
  b.B = 2;
  b.T = 3;
  b.inputs = {1, 2, 3, 4, 5, 6};
  b.targets = {2, 3, 4, 5, 6, 7};
  auto [x, y] = batch_tensors(b);
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.scalar_type(), torch::kLong);
  EXPECT_EQ(x[1][2].item<int64_t>(), 6);
  EXPECT_TRUE(torch::equal(y, x + 1));
  EXPECT_EQ(x.data_ptr<int64_t>(), b.inputs.data());
}

}  // namespace slm::data
