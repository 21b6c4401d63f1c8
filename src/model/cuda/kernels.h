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

// Residual add + LayerNorm over `rows` rows of C (row-major, contiguous): s = r + d, rounded to s's
// dtype (that of r); y = (s - mean) / sqrt(var + eps) * w + b in y's dtype (the next matmul's:
// autocast's, or s's); mean and rstd per row in fp32 for the backward. w, b: fp32 (C).
struct AddLayerNorm {
  const void* r = nullptr;
  const void* d = nullptr;
  void* s = nullptr;
  void* y = nullptr;
  DType s_type = DType::kFloat, d_type = DType::kFloat, y_type = DType::kFloat;
  const float *w = nullptr, *b = nullptr;
  float *mean = nullptr, *rstd = nullptr;
  int64_t rows = 0, C = 0;
  float eps = 1e-5f;
};
int add_layer_norm_forward(const AddLayerNorm& a, void* stream);

// Its backward: gx = the gradient of s (so of r and of d) = LayerNorm's input gradient from gy
// (y's dtype) plus gs (s's dtype; nullptr: 0), in s's dtype; gd (nullptr: none) the same rounded
// once more to y's dtype, for a d of that dtype (bf16 autocast's delta), in the same pass; dw and
// db (fp32) written to dwdb (2 x C: dw, then db). `partial`: fp32 scratch of warps x 2 x C, where each of `warps` warps (a
// multiple of kAddLayerNormWarpsPerBlock) sums its rows' share in registers before the columns are
// added up in a fixed order: no atomics, the same bits every run. Rows of 1 to kAddLayerNormMaxC.
constexpr int kAddLayerNormWarpsPerBlock = 8;
constexpr int64_t kAddLayerNormMaxC = 2048;  // 64 columns per lane: GPT-2 XL's 1600 fits
struct AddLayerNormGrad {
  const void* gy = nullptr;
  const void* gs = nullptr;
  const void* s = nullptr;
  DType s_type = DType::kFloat, y_type = DType::kFloat;
  const float *mean = nullptr, *rstd = nullptr, *w = nullptr;
  void* gx = nullptr;
  void* gd = nullptr;
  float *dwdb = nullptr, *partial = nullptr;  // dwdb: 2 x C, dw then db
  int64_t rows = 0, C = 0, warps = 0;
};
int add_layer_norm_backward(const AddLayerNormGrad& g, void* stream);

// GPT-2's GELU (tanh form) of x + b over `rows` rows of N (row-major, contiguous): y = gelu(x + b)
// in x's dtype, b fp32 (N): the fc matmul's output without its bias, the bias added here. Blocks
// of 256 columns over `groups` row groups (1 <= groups <= 65535; rows g, g + groups, ...).
struct BiasGelu {
  const void* x = nullptr;
  const float* b = nullptr;
  void* y = nullptr;
  DType type = DType::kFloat;
  int64_t rows = 0, N = 0, groups = 1;
};
int bias_gelu_forward(const BiasGelu& a, void* stream);

// Its backward: gx = gy * gelu'(x + b) in x's dtype, and db (fp32, N) = the column sums of gx,
// through `partial` (fp32 scratch of groups x N: one partial sum per row group, 1 <= groups <=
// 65535) added up in a fixed order: no atomics, the same bits every run.
struct BiasGeluGrad {
  const void* gy = nullptr;
  const void* x = nullptr;
  const float* b = nullptr;
  void* gx = nullptr;
  float *db = nullptr, *partial = nullptr;
  DType type = DType::kFloat;
  int64_t rows = 0, N = 0, groups = 1;
};
int bias_gelu_backward(const BiasGeluGrad& g, void* stream);

}  // namespace slm::model::cuda
