// parallel/tensor/layers.h: a GPT-2 block split across a tensor-parallel group (Megatron style).
// Owns: shard_block (a rank's slices of a full block), tp_block_forward and its deferred form.
// Rank r of tp holds attention heads [r*H/tp, (r+1)*H/tp): the q, k and v rows of c_attn for those
// heads (column-parallel), the matching input columns of attn.c_proj (row-parallel), rows
// [r*4C/tp, (r+1)*4C/tp) of mlp.c_fc (column-parallel) and those input columns of mlp.c_proj
// (row-parallel). LayerNorms and the row-parallel biases are replicated (added once, after the
// all-reduce). Per block: two all-reduces forward (g), two backward (f).
// Sequence parallelism (TpSplit::seq_len > 0): the LayerNorms and residual adds work on this
// rank's 1/tp of the token rows (mappings.h), an all-gather before each column-parallel linear and
// a reduce-scatter after each row-parallel one taking the all-reduce's place (the same bytes on
// NCCL), so that the LayerNorms' inputs kept for backward are 1/tp as large. The column-parallel
// linears keep only this rank's rows of their input too and gather them again in backward
// (sequence_parallel_linear.h). The replicated parameters see only this rank's tokens: their
// gradients are summed over tp after the backward (parallel/data_parallel.h, finish_grads).
// Dropout (model.dropout, TpSplit::train) as the whole model's: on the attention weights and on
// both residual branches; its masks come from the default generator where every tp rank holds the
// activation whole, from the split regions' generator where a rank holds its own part (random.h).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

#include "comm/group.h"
#include "model/gpt2.h"

namespace slm::parallel::tensor {

// How the model's pieces use their tensor-parallel group. `group` must outlive the backward pass.
struct TpSplit {
  TpSplit(const comm::Group& g, int64_t sequence = 0, bool training = false)  // a group alone: no sp, no dropout
      : group(g), seq_len(sequence), train(training) {}
  const comm::Group& group;
  int64_t seq_len = 0;  // sequence parallelism: the sequence length T; 0 = off
  bool train = false;   // dropout on (model.dropout > 0; random.h says where it draws)
  bool sequence_parallel() const { return seq_len > 0 && group.size > 1; }
};

// Rank `rank`'s slices of `full` for a group of `tp` (new leaf tensors with requires_grad).
// REQUIRES: tp divides n_head (and so n_embd).
model::Block shard_block(const model::Block& full, const model::GPT2Config& c, int rank, int tp);
// x (B, T, C), replicated on the tp group -> (B, T, C), replicated (sequence parallel: this rank's
// token rows, (B·T/tp, C), in and out).
at::Tensor tp_block_forward(const model::Block& local, const at::Tensor& x, const model::GPT2Config& c,
                            const TpSplit& tp);
// The same block on x + d, its own last residual add left out: {out, delta}, the block's output
// being out + delta (d undefined: the input is x). The residual adds meet the LayerNorms after them
// (model::add_layer_norm: one kernel each way on GPUs), as in model::block_forward_deferred.
std::pair<at::Tensor, at::Tensor> tp_block_forward_deferred(const model::Block& local, const at::Tensor& x,
                                                            const at::Tensor& d, const model::GPT2Config& c,
                                                            const TpSplit& tp);

}  // namespace slm::parallel::tensor
