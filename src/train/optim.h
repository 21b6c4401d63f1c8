// train/optim.h: the optimizer and the learning-rate schedule.
// Owns: make_adamw (AdamW with two parameter groups: decay for matrices except the position
// embedding, none for biases, LayerNorm and wpe, as in GPT-2 practice), lr_at (warmup then
// cosine/linear/constant decay to a floor), set_lr, clip_grad_norm.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "train/config.h"

namespace torch::optim {
class Optimizer;
}

namespace slm::train {

std::unique_ptr<torch::optim::Optimizer> make_adamw(
    const std::vector<std::pair<std::string, at::Tensor>>& named_params, const OptimConfig& o);
// Learning rate for optimizer step `step` (0-based).
double lr_at(const ScheduleConfig& s, double peak_lr, int64_t step);
void set_lr(torch::optim::Optimizer& opt, double lr);
// Clips the global L2 norm of all gradients to max_norm (no-op when 0); returns the norm before.
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace slm::train
