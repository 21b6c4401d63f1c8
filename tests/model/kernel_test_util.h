// tests/model/kernel_test_util.h: the error measure the kernel tests (CPU and CUDA) compare with
// their double-precision ATen references.
#pragma once
#include <torch/torch.h>

#include <algorithm>

namespace slm::model::test {

// max |got - ref| / max |ref|, in double; a reference below 1e-6 counts as 1e-6 (a gradient that is
// 0 in exact arithmetic comes out of the double reference as rounding noise, ~1e-14).
inline double rel_err(const at::Tensor& got, const at::Tensor& ref) {
  return (got.to(at::kDouble) - ref.to(at::kDouble)).abs().max().item<double>() /
         std::max(1e-6, ref.abs().max().item<double>());
}

}  // namespace slm::model::test
