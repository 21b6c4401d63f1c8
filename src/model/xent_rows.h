// model/xent_rows.h: softmax cross-entropy of a chunk of logit rows in one pass per row, for the
// fused head (fused_head.cpp). Owns: xent_rows_supported, xent_rows.
// Each row is read once into a buffer that stays in L1/L2: its max, exp and sum, the row's loss
// log(sum) + max - logit[target], and (asked for) the gradient softmax - onehot written over the
// logits in their own dtype. ATen's log_softmax, exp and cast each stream the whole (rows, V) block
// through memory, which on a 2-core VM costs more than the head's three matmuls together
// (docs/benchmarks.md). Vectorised with AVX-512 or AVX2 (model/cpu_rows.h; a hand-written exp,
// ~1 ulp); on a GPU the same
// in a CUDA kernel (model/cuda/xent_rows.cu); elsewhere the fused head keeps ATen's ops.
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model {

// Whether xent_rows can run on `logits` (rows, width) with the first V columns taking part: a
// contiguous CPU tensor with width == V of a dtype cpu_rows_take takes (fp32 and bf16 with AVX-512,
// fp32 with AVX2), or, in
// a build with the own CUDA kernels (model/cuda/kernels.h), a contiguous float, bf16 or fp16 CUDA
// tensor of any width >= V (the padded vocabulary).
bool xent_rows_supported(const at::Tensor& logits, int64_t V);

// Per-row loss (rows) as fp32; with `grad`, logits are replaced by softmax - onehot(target), and
// columns from V on by 0. targets: (rows) int64 in [0, V) (on a GPU, a loss of NaN marks one that
// is not: no host sync to check them).
at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, bool grad, int64_t V);

}  // namespace slm::model
