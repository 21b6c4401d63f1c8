// tests/host/blas_info_test.cpp: the BLAS that takes LibTorch's fp32 CPU matrix products is the one
// intended (host/blas_info.h): LibTorch's own where it carries one (PyPI's builds: MKL), else
// OpenBLAS's OpenMP flavour (Debian's 1.13, through slm's RPATH); never a library loaded ahead of
// LibTorch's own, never the reference BLAS. This binary links as slm does (slm_torch's interface).
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include "host/blas_info.h"
#include "host/machine.h"

namespace slm::host {

TEST(BlasInfo, TheIntendedBlasTakesTheProducts) {
  const BlasInfo b = blas_info();
  ASSERT_FALSE(b.file.empty()) << "no sgemm_ loaded";
  EXPECT_FALSE(b.shadowed) << "LibTorch's own sgemm_ is shadowed by " << b.file;
  EXPECT_FALSE(b.slow) << b.file;
  EXPECT_FALSE(b.own_threads) << b.kind;
  if (b.torch_own) {
    EXPECT_NE(b.file.find("libtorch_cpu"), std::string::npos) << b.file;
    EXPECT_EQ(b.kind, at::hasMKL() ? "MKL in LibTorch" : "LibTorch's own");
  } else {
    EXPECT_NE(b.kind.find("OpenBLAS"), std::string::npos) << b.kind << " in " << b.file;
    EXPECT_NE(b.kind.find("OpenMP"), std::string::npos) << b.kind << " in " << b.file;
  }
  EXPECT_NE(describe_machine(machine_facts()).find(", BLAS " + b.kind), std::string::npos);
}

}  // namespace slm::host
