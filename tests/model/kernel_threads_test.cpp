// tests/model/kernel_threads_test.cpp: slm's own kernels get every intra-op thread. Their
// at::parallel_for is compiled into slm's files, and without OpenMP there it runs on one thread
// whatever LibTorch's thread count says (it did, until 2026-11-27).
#include "model/kernel_threads.h"

#include <gtest/gtest.h>
#include <ATen/Parallel.h>

namespace slm::model {
namespace {

TEST(KernelThreads, TheModelsKernelsUseEveryIntraOpThread) {
  const int was = at::get_num_threads();
  at::set_num_threads(2);
  EXPECT_EQ(kernel_threads(), 2);
  at::set_num_threads(was);
}

}  // namespace
}  // namespace slm::model
