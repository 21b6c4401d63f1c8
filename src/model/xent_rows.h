// model/xent_rows.h: softmax cross-entropy of a chunk of logit rows in one pass per row, for the
// fused head (fused_head.cpp). Owns: xent_rows_supported, xent_rows.
// Each row is read once into a buffer that stays in L1/L2: its max, exp and sum, the row's loss
// log(sum) + max - logit[target], and (asked for) the gradient softmax - onehot written over the
// logits in their own dtype. ATen's log_softmax, exp and cast each stream the whole (rows, V) block
// through memory, which on a 2-core VM costs more than the head's three matmuls together
// (docs/benchmarks.md). Vectorised with AVX-512 (a hand-written exp, ~1 ulp); elsewhere the fused
// head keeps ATen's ops.
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model {

// Whether xent_rows can run on `logits` here: a contiguous CPU float or bf16 (rows, V) tensor on a
// CPU with AVX-512 (F, BW and VL).
bool xent_rows_supported(const at::Tensor& logits);

// Per-row loss (rows) as fp32; with `grad`, logits are replaced by softmax - onehot(target).
// targets: (rows) int64 in [0, V).
at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, bool grad);

}  // namespace slm::model
