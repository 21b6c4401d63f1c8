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

// On the CPU: the same values in memory of their own, so the batch can go.
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

// On a GPU (bench/gpu/gpu_kernels.sh runs it; skipped elsewhere): the copies run on a side stream
// while earlier work runs; what is queued after them on the current stream sees their values, and
// their memory is not handed out again while that work may still read it. Twenty batches behind a
// long matmul, each summed on the current stream, the sums read at the end.
TEST(BatchTensor, OnCudaTheNextWorkSeesTheCopiedValues) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  std::vector<at::Tensor> sums;
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 20; ++i) {
    const at::Tensor busy = torch::randn({4096, 4096}, cuda);
    (void)busy.mm(busy).mm(busy);  // the compute stream busy while the copy runs
    Batch b;
    b.B = 64, b.T = 1024;
    b.inputs.assign(static_cast<size_t>(b.B * b.T), i), b.targets.assign(static_cast<size_t>(b.B * b.T), 2 * i);
    auto [x, y] = batch_on(b, "cuda");
    b.inputs.assign(b.inputs.size(), -1), b.targets.assign(b.targets.size(), -1);  // the batch may go
    sums.push_back(x.sum() + y.sum());
    want.push_back(3 * i * b.B * b.T);
  }
  for (size_t i = 0; i < sums.size(); ++i) EXPECT_EQ(sums[i].item<int64_t>(), want[i]) << i;
}

}  // namespace slm::data
