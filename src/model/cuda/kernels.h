// model/cuda/kernels.h: the project's own CUDA kernels, behind plain C++ launchers (raw pointers,
// the stream as a void*), so the .cu files need neither LibTorch nor its headers and compile in
// seconds. Built only in a CUDA-enabled build (CMakeLists.txt: SLM_HAVE_CUDA_KERNELS); the
// torch-facing callers (model/xent_rows.cpp, ...) check shapes and dtypes and take the current
// stream. Each launcher returns the CUDA error code of its launch (0 = success).
// Owns: DType and the launchers. One kernel (forward and backward together where they share the
// pass) per file, as llm.c keeps them.
#pragma once
#include <cstdint>

namespace slm::model::cuda {

enum class DType { kFloat, kBFloat16, kHalf };

// Softmax cross-entropy of `rows` rows of `width` logits each (row-major), of which the first V
// take part (the rest are the padded vocabulary: no probability, gradient 0). loss[r] =
// logsumexp(row[0:V]) - row[target[r]] in fp32, NaN for a target outside [0, V). With grad, the
// row is overwritten by softmax - onehot(target) (columns from V on: 0), rounded once to its dtype.
// One block per row, two passes over it (max and sum of exponentials online, then the gradient).
int xent_rows(void* logits, float* loss, const int64_t* targets, int64_t rows, int64_t width, int64_t V, bool grad,
              DType dtype, void* stream);

}  // namespace slm::model::cuda
