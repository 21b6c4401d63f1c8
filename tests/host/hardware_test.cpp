// tests/host/hardware_test.cpp: the device's measured GEMM peak (MFU's denominator), cached per
// build and kernels revision.
#include <gtest/gtest.h>

#include <string>

#include <torch/version.h>

#include "host/hardware.h"
#include "model/kernel_threads.h"
#include "test_util.h"
#include "util/files.h"

// The measured GEMM peak (MFU's denominator) is cached per CPU, thread count, runtime settings,
// build and kernels revision: LibTorch 1.13 with OpenBLAS and 2.x with MKL time the same CPU
// differently.
TEST(Peak, CachedPerBuild) {
  const slm::test::TempHome home("peak");
  const slm::host::DeviceInfo first = slm::host::describe_device("cpu", "fp32", 1, 0, 0);
  EXPECT_EQ(first.peak_source, "measured now");
  EXPECT_GT(first.peak_flops, 0);
  const std::string cached = slm::read_file(home.dir + "/.cache/slmtrain/peak.json");
  EXPECT_NE(cached.find(std::string("LibTorch ") + TORCH_VERSION + ", BLAS "), std::string::npos) << cached;
  EXPECT_NE(cached.find(", slm kernels r" + std::to_string(slm::model::kKernelsRevision)), std::string::npos) << cached;
  const slm::host::DeviceInfo again = slm::host::describe_device("cpu", "fp32", 1, 0, 0);
  EXPECT_EQ(again.peak_source, "cached");
  EXPECT_EQ(again.peak_flops, first.peak_flops);
}
