// train/optim.cpp: see optim.h.
#include "train/optim.h"

#include <torch/torch.h>

#include <cmath>

namespace slm::train {

std::unique_ptr<torch::optim::Optimizer> make_adamw(
    const std::vector<std::pair<std::string, at::Tensor>>& named_params, const OptimConfig& o) {
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& [name, p] : named_params)
    (p.dim() >= 2 && name != "wpe.weight" ? decay : no_decay).push_back(p);
  auto opts = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, opts(o.weight_decay));
  groups.emplace_back(no_decay, opts(0.0));
  return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(o.lr));
}

double lr_at(const ScheduleConfig& s, double peak, int64_t step) {
  if (step < s.warmup_steps) return peak * static_cast<double>(step + 1) / s.warmup_steps;
  if (s.decay == "constant") return peak;
  const double floor = peak * s.min_lr_ratio;
  const int64_t span = std::max<int64_t>(1, s.max_steps - s.warmup_steps);
  const double t = std::min(1.0, static_cast<double>(step - s.warmup_steps) / span);
  const double shape = s.decay == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * t)) : 1.0 - t;
  return floor + (peak - floor) * shape;
}

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().detach().to(at::kFloat).norm(2));
  if (norms.empty()) return 0.0;
  double total = at::stack(norms).norm(2).item<double>();
  if (max_norm > 0 && total > max_norm) {
    double scale = max_norm / (total + 1e-6);
    torch::NoGradGuard g;
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().mul_(scale);
  }
  return total;
}

}  // namespace slm::train
