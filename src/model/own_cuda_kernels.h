// model/own_cuda_kernels.h: whether the model runs slm's own CUDA kernels (model/cuda/: the head's
// softmax cross-entropy, the residual add + LayerNorm, the bias + GELU) where they apply, or
// ATen's ops everywhere (system.cuda_kernels = "off": to measure what the kernels buy, or to rule
// them out). One process-wide switch, on by default; no effect on CPUs or in a build without them.
// Owns: own_cuda_kernels, set_own_cuda_kernels, own_cuda_kernels_built, describe_own_cuda_kernels.
#pragma once
#include <string>

namespace slm::model {

bool own_cuda_kernels();
void set_own_cuda_kernels(bool on);
// Whether this build has them (a CUDA LibTorch and nvcc: SLM_HAVE_CUDA_KERNELS).
bool own_cuda_kernels_built();
// Which kernels the model runs on a GPU, for the run's header.
std::string describe_own_cuda_kernels();

}  // namespace slm::model
