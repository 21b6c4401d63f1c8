// parallel/tensor/random.h: dropout's random numbers under tensor parallelism (Megatron-LM's
// model-parallel RNG). Where every tp rank holds the same activation (the residual stream and the
// embeddings, without sequence parallelism) dropout draws from the default generator, in step on
// every tp rank: every rank seeds it alike (train/setup.cpp) and draws as many numbers, so the
// ranks' copies stay equal. Where each rank holds its own part (its attention heads; with
// sequence parallelism its token rows) the draws come from a second generator seeded per tp rank,
// so that the ranks' masks are independent, as one process's masks over the whole activation are.
// Owns: seed_split_rng, SplitRngScope, split_rng_state / set_split_rng_state (checkpoints).
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace slm::parallel::tensor {

// The split regions' generator of this process (one per device type), from `seed` and the tp rank.
void seed_split_rng(uint64_t seed, int tp_rank);

// While it lives, the default generator of `device` draws from the split regions' stream (the
// default stream is put aside and comes back at the end of the scope). Not nested.
class SplitRngScope {
 public:
  explicit SplitRngScope(c10::Device device);
  ~SplitRngScope();
  SplitRngScope(const SplitRngScope&) = delete;
  SplitRngScope& operator=(const SplitRngScope&) = delete;

 private:
  c10::Device device_;
  at::Tensor default_state_;
};

// The split stream's state for `device`'s generator type (a checkpoint's: the CPU's, and the
// current GPU's on a CUDA run), and setting it back.
at::Tensor split_rng_state(c10::Device device);
void set_split_rng_state(c10::Device device, const at::Tensor& state);

}  // namespace slm::parallel::tensor
