// model/fused_head.h: the language-model head and its cross-entropy as one operation, chunked over
// the rows. Owns: fused_linear_cross_entropy.
// Instead of linear + cross_entropy's (N, V) logits, fp32 log-softmax (kept for backward) and
// gradient, the forward pass computes the logits (in the autocast dtype when autocast is on),
// turns them in place into their loss and, when a gradient will be asked for, into softmax -
// onehot (xent_rows.h: one pass per row, in cache), and takes dx = G W and dW = G^T x right away;
// the backward pass only scales the two saved gradients by the incoming one. One (N, V) tensor in
// the compute dtype, transient, instead of three, one of them kept; rows beyond 2^28 logits go in
// chunks. The same numbers as linear + cross_entropy up to the dtype's rounding (tests/model).
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model {

// Mean cross-entropy of x (N, C) @ w[0:V]^T against targets (N) in [0, V). w may have more rows
// than V (the padded vocabulary): those get a zero gradient. rows_per_chunk 0 picks a size. width:
// the logits' columns, in [V, w's rows]; the ones past V are -inf (0 picks: V on the CPU, w's
// rows elsewhere, whose GEMMs want aligned rows).
at::Tensor fused_linear_cross_entropy(const at::Tensor& x, const at::Tensor& w, int64_t V, const at::Tensor& targets,
                                      int64_t rows_per_chunk = 0, int64_t width = 0);

}  // namespace slm::model
