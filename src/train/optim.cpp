// train/optim.cpp: see optim.h.
#include "train/optim.h"

#include <torch/torch.h>

#include <cmath>

namespace slm::train {

AdamW make_adamw(const parallel::FlatLayout& l, const std::vector<parallel::Segment>& segs, const at::Tensor& param) {
  AdamW a;
  a.exp_avg = at::zeros_like(param);
  a.exp_avg_sq = at::zeros_like(param);
  a.scratch = at::empty_like(param);
  for (const parallel::Segment& s : segs)
    for (size_t i = 0; i < l.names.size(); ++i) {
      if (l.shapes[i].size() < 2 || l.names[i] == "wpe.weight") continue;
      int64_t lo = std::max(l.offsets[i], s.global), hi = std::min(l.offsets[i] + l.numels[i], s.global + s.size);
      if (lo < hi) a.decay.push_back({lo - s.global + s.local, hi - s.global + s.local});
    }
  return a;
}

void adamw_step(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o, double lr) {
  torch::NoGradGuard no_grad;
  a.step += 1;
  if (o.weight_decay != 0)
    for (auto [lo, hi] : a.decay) param.narrow(0, lo, hi - lo).mul_(1 - lr * o.weight_decay);
  a.exp_avg.mul_(o.beta1).add_(grad, 1 - o.beta1);
  a.exp_avg_sq.mul_(o.beta2).addcmul_(grad, grad, 1 - o.beta2);
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(a.step));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(a.step));
  at::sqrt_out(a.scratch, a.exp_avg_sq).div_(std::sqrt(bc2)).add_(o.eps);
  param.addcdiv_(a.exp_avg, a.scratch, -lr / bc1);
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

}  // namespace slm::train
