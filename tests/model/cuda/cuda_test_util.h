// tests/model/cuda/cuda_test_util.h: what the CUDA kernel tests share: whether they can run here,
// and the error measure they compare with the double-precision ATen reference.
#pragma once
#include <torch/torch.h>

#include <algorithm>

namespace slm::model::test {

// A GPU, and a build with the own CUDA kernels (else the tests skip).
inline bool have_cuda_kernels() {
#ifdef SLM_HAVE_CUDA_KERNELS
  return torch::cuda::is_available();
#else
  return false;
#endif
}

// max |got - ref| / max |ref|, in double; a reference below 1e-6 counts as 1e-6 (a gradient that is
// 0 in exact arithmetic comes out of the double reference as rounding noise, ~1e-14).
inline double rel_err(const at::Tensor& got, const at::Tensor& ref) {
  return (got.to(at::kDouble) - ref).abs().max().item<double>() / std::max(1e-6, ref.abs().max().item<double>());
}

}  // namespace slm::model::test
