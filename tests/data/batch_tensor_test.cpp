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

// On the CPU (the CUDA form stages through pinned memory: bench/gpu runs it): the same values in
// memory of their own, so the batch can go.
TEST(BatchTensor, OnADeviceOwnsItsMemory) {
  Batch b;
  b.B = 2, b.T = 2;
  b.inputs = {1, 2, 3, 4};
  b.targets = {2, 3, 4, 5};
  auto [x, y] = batch_on(b, "cpu");
  EXPECT_NE(x.data_ptr<int64_t>(), b.inputs.data());
  EXPECT_NE(y.data_ptr<int64_t>(), b.targets.data());
  b.inputs.assign(4, 0), b.targets.assign(4, 0);
  EXPECT_TRUE(torch::equal(x, torch::tensor({1, 2, 3, 4}, torch::kLong).view({2, 2})));
  EXPECT_TRUE(torch::equal(y, x + 1));
}

}  // namespace slm::data
