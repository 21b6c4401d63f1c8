// parallel/tensor/model.h: a whole GPT-2 split across a tensor-parallel group.
// Owns: apply_tensor_parallel (replace the model's tensors by this rank's slices), forward_loss
// (vocabulary-parallel embedding, sharded blocks, vocabulary-parallel head and cross-entropy) and
// replicated_over_tp (which parameters every tp rank holds whole: their gradients are equal on all
// tp ranks and must be counted once in the global gradient norm).
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "comm/group.h"
#include "model/gpt2.h"
#include "model/recompute.h"
#include "parallel/flat.h"
#include "parallel/tensor/layers.h"

namespace slm::parallel::tensor {

// UserError (one line) unless tp divides n_head and the padded vocabulary (and, under sequence
// parallelism, `sp_seq_len`: the sequence length T; 0 = off).
void validate_tp(const model::GPT2Config& c, int tp, int64_t sp_seq_len = 0);
// In place: m's blocks and token embedding become this rank's slices (see layers.h,
// cross_entropy.h). Deterministic: every rank slices the same full initialisation.
void apply_tensor_parallel(model::GPT2& m, const comm::Group& tp);
// Mean next-token loss (same value on every tp rank). `tp` must outlive the backward pass; `sp`:
// sequence parallelism (layers.h); `train`: dropout on.
at::Tensor forward_loss(const model::GPT2& m, const at::Tensor& idx, const at::Tensor& targets,
                        const comm::Group& tp, bool sp = false, bool train = false);
// The pieces, for pipeline stages: vocabulary-parallel embedding (B, T) -> (B, T, C); blocks
// h[begin, end); final LayerNorm + vocabulary-parallel head and cross-entropy (head or wte).
// Sequence parallel: the embedding's output, the blocks' input and output and the head's input
// are this rank's token rows (B·T/tp, C) (tp.seq_len = T). With model.recompute (and x requiring
// gradients) each block keeps only its input and runs again, collectives included, in backward.
at::Tensor embed(const model::GPT2& m, const at::Tensor& idx, const TpSplit& tp);
at::Tensor run_blocks(const model::GPT2& m, at::Tensor x, size_t begin, size_t end, const TpSplit& tp);
at::Tensor head_loss(const model::GPT2& m, const at::Tensor& x, const at::Tensor& targets, const TpSplit& tp);
// tp_block_forward as recomputation and ZeRO 3 run it again in backward (model/recompute.h): the
// function, and the integers it reads (the split's group address, which must outlive the
// backward pass, and its sequence length).
model::BlockRun tp_block_run();
std::vector<int64_t> tp_block_context(const TpSplit& split);
bool replicated_over_tp(const std::string& parameter_name);
// Where tp rank `rank`'s slice of a parameter sits in the whole parameter (both row-major,
// flattened): pieces {local offset, global offset, size}; none for an unsplit parameter.
// The inverse of shard_block / apply_tensor_parallel, for checkpoints in whole-model coordinates.
std::vector<Segment> tp_pieces(const std::string& name, const model::GPT2Config& c, int rank, int tp);

}  // namespace slm::parallel::tensor
