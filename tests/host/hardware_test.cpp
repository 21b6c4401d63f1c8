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

// The peak's GEMM grows from 256 while the next size would take at most ~0.25 s: a fast path is
// timed at the largest size (2048 on a CPU), a slow one (bf16 through ATen's reference GEMM on a
// CPU without bf16 instructions: minutes at 2048) at a small one.
TEST(Peak, GemmSizeStopsBeforeASlowMatmul) {
  using slm::host::next_gemm_size;
  EXPECT_EQ(next_gemm_size(256, 0.0004, 2048), 512);
  EXPECT_EQ(next_gemm_size(1024, 0.021, 2048), 2048);  // fp32 on 2 EPYC cores: 0.17 s at 2048
  EXPECT_EQ(next_gemm_size(2048, 0.17, 2048), 0);      // the largest size
  EXPECT_EQ(next_gemm_size(256, 0.033, 2048), 0);      // ~1 GFLOP/s: 0.27 s at 512
  EXPECT_EQ(next_gemm_size(4096, 0.0002, 8192), 8192);
}
