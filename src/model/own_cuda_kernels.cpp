// model/own_cuda_kernels.cpp: see own_cuda_kernels.h.
#include "model/own_cuda_kernels.h"

#include <atomic>

namespace slm::model {
namespace {
std::atomic<bool> on{true};
}  // namespace

bool own_cuda_kernels() { return on.load(std::memory_order_relaxed); }
void set_own_cuda_kernels(bool v) { on.store(v, std::memory_order_relaxed); }

bool own_cuda_kernels_built() {
#ifdef SLM_HAVE_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

std::string describe_own_cuda_kernels() {
  if (!own_cuda_kernels_built()) return "ATen's (this build has no own kernels)";
  if (!own_cuda_kernels()) return "ATen's (system.cuda_kernels = off)";
  return "slm's own (softmax cross-entropy, residual add + LayerNorm, bias + GELU)";
}

}  // namespace slm::model
