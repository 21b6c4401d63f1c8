// tests/model/cuda/cuda_test_util.h: what the CUDA kernel tests share: whether they can run here,
// and (model/kernel_test_util.h) the error measure they compare with the double-precision ATen reference.
#pragma once
#include <torch/torch.h>

#include "model/kernel_test_util.h"

namespace slm::model::test {

// A GPU, and a build with the own CUDA kernels (else the tests skip).
inline bool have_cuda_kernels() {
#ifdef SLM_HAVE_CUDA_KERNELS
  return torch::cuda::is_available();
#else
  return false;
#endif
}

}  // namespace slm::model::test
