// tests/model/kernel_test_util.h: the error measure the kernel tests (CPU and CUDA) compare with
// their double-precision ATen references; for the CPU kernels, a run per instruction set.
#pragma once
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "model/cpu_rows.h"

namespace slm::model::test {

// max |got - ref| / max |ref|, in double; a reference below 1e-6 counts as 1e-6 (a gradient that is
// 0 in exact arithmetic comes out of the double reference as rounding noise, ~1e-14).
inline double rel_err(const at::Tensor& got, const at::Tensor& ref) {
  return (got.to(at::kDouble) - ref.to(at::kDouble)).abs().max().item<double>() /
         std::max(1e-6, ref.abs().max().item<double>());
}

// Runs check() once per instruction set the CPU kernels have on this CPU (model/cpu_rows.h):
// AVX-512 and then, held to it, AVX2 on an AVX-512 CPU; AVX2 alone on an AVX2 one; never on a CPU
// with neither. A check skips bf16 where cpu_rows_take says no.
template <typename F>
void for_each_cpu_rows(F&& check) {
  for (CpuRows isa : {CpuRows::kAvx512, CpuRows::kAvx2}) {
    if (cpu_rows_isa() < isa) continue;
    const CpuRowsLimit limit(isa);
    SCOPED_TRACE(isa == CpuRows::kAvx512 ? "AVX-512 kernels" : "AVX2 kernels");
    check();
  }
}

}  // namespace slm::model::test
