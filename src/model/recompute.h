// model/recompute.h: activation recomputation (gradient checkpointing) of a transformer block.
// Owns: block_forward_recompute. The forward keeps only the block's input; backward runs the
// block again with autograd on (under the autocast state the forward saw) and differentiates it.
// Trades one extra block forward per step for not storing the block's activations; the
// TFLOP/s formula counts it (96 instead of 72). Not combined with dropout (the recomputed masks
// would differ): validate() rejects that.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/gpt2.h"

namespace slm::model {

// A block's forward as recomputation runs it, and runs it again in backward: block_forward, or a
// tensor-parallel block's (parallel/tensor/model.cpp). `context`: the integers it needs besides
// the block (a process group's address, say), kept until the backward pass. c holds n_head and
// n_embd.
using BlockRun = at::Tensor (*)(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train,
                                const std::vector<int64_t>& context);

// run(b, x, c, train, context), or block_forward where run is null.
at::Tensor forward_block(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train, BlockRun run = nullptr,
                         const std::vector<int64_t>& context = {});

// run(b, x, c, train, context) (block_forward where run is null), keeping only x for backward.
at::Tensor block_forward_recompute(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train,
                                   BlockRun run = nullptr, const std::vector<int64_t>& context = {});

// Autocast on/off for CPU and GPU, to re-enter a forward pass's precision in backward.
struct AutocastState {
  bool cpu = false, gpu = false;
};
AutocastState autocast_state();
void set_autocast_state(AutocastState s);
// Autocast off in a scope (for code that casts explicitly), restored on leaving it.
struct AutocastOff {
  AutocastState was = autocast_state();
  AutocastOff() { set_autocast_state({}); }
  ~AutocastOff() { set_autocast_state(was); }
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;
};
// Runs block_forward (or `run`) again inside a backward pass: with gradients on and the forward
// pass's autocast state (restored afterwards). For the recomputing autograd Functions.
at::Tensor rerun_block(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train, AutocastState forward,
                       BlockRun run = nullptr, const std::vector<int64_t>& context = {});
// The order of Block's twelve tensors, as a list and back (for autograd Functions).
std::vector<at::Tensor> params_of(const Block& b);
Block block_of(at::TensorList p);

}  // namespace slm::model
