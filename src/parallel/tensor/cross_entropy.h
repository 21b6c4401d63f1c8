// parallel/tensor/cross_entropy.h: the vocabulary split across a tensor-parallel group: rank r
// holds rows [r*Vp/tp, (r+1)*Vp/tp) of the (tied) token embedding, so neither the embedding nor
// the logits are ever whole on one rank.
// Owns: vocab_range, vocab_parallel_lookup, vocab_parallel_embedding, vocab_parallel_cross_entropy.
// The cross-entropy's three all-reduces (max, sum of exponentials, target logit) sit in one
// autograd Function; its backward is local (softmax minus one-hot on this rank's columns).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

#include "comm/group.h"

namespace slm::parallel::tensor {

// [start, start + size) of the padded vocabulary Vp held by tp rank `rank`. REQUIRES: tp | Vp.
std::pair<int64_t, int64_t> vocab_range(int64_t padded_vocab, int rank, int tp);
// idx (B, T) -> (B, T, C): each rank looks up the ids in its range, zeros elsewhere
// (vocab_parallel_lookup), then g (forward all-reduce, backward identity).
at::Tensor vocab_parallel_lookup(const at::Tensor& idx, const at::Tensor& wte_local, int64_t start);
at::Tensor vocab_parallel_embedding(const at::Tensor& idx, const at::Tensor& wte_local, int64_t start,
                                    const comm::Group& tp);
// Mean cross-entropy of logits_local (N, Vp/tp: this rank's columns; columns >= vocab_size are
// padding and ignored) against targets (N). Same value on every rank.
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits_local, const at::Tensor& targets, int64_t start,
                                        int64_t vocab_size, const comm::Group& tp);

}  // namespace slm::parallel::tensor
