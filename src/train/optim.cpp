// train/optim.cpp: see optim.h.
#include "train/optim.h"

#include <torch/torch.h>

#include <cmath>

#include "util/torch_compat.h"

namespace slm::train {

static constexpr int64_t kChunk = 1 << 16;  // elements per chunk: 4 tensors x 256 KiB stay in L2

AdamW make_adamw(const parallel::FlatLayout& l, const std::vector<parallel::Segment>& segs, const at::Tensor& param) {
  AdamW a;
  a.exp_avg = at::zeros_like(param);
  a.exp_avg_sq = at::zeros_like(param);
  a.scratch = at::empty({std::min<int64_t>(param.numel(), kChunk)}, param.options());
  for (const parallel::Segment& s : segs)
    for (size_t i = 0; i < l.names.size(); ++i) {
      if (l.shapes[i].size() < 2 || l.names[i] == "wpe.weight") continue;
      int64_t lo = std::max(l.offsets[i], s.global), hi = std::min(l.offsets[i] + l.numels[i], s.global + s.size);
      if (lo < hi) a.decay.push_back({lo - s.global + s.local, hi - s.global + s.local});
    }
  return a;
}

void adamw_step(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o, double lr, bool fused) {
  torch::NoGradGuard no_grad;
  a.step += 1;
  if (o.weight_decay != 0)
    for (auto [lo, hi] : a.decay) param.narrow(0, lo, hi - lo).mul_(1 - lr * o.weight_decay);
  if (o.name == "sgd") {
    param.add_(grad, -lr);
    return;
  }
  if (fused && compat::fused_adam(param, grad, a.exp_avg, a.exp_avg_sq, a.step, lr, o.beta1, o.beta2, o.eps)) return;
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(a.step));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(a.step));
  const int64_t n = param.numel();
  const int64_t chunk = param.is_cuda() ? n : kChunk;  // a GPU wants few large kernels
  for (int64_t off = 0; off < n; off += chunk) {
    const int64_t len = std::min(chunk, n - off);
    at::Tensor p = param.narrow(0, off, len), g = grad.narrow(0, off, len);
    at::Tensor m = a.exp_avg.narrow(0, off, len), v = a.exp_avg_sq.narrow(0, off, len);
    at::Tensor denom = len <= a.scratch.numel() ? a.scratch.narrow(0, 0, len) : at::empty_like(p);
    m.mul_(o.beta1).add_(g, 1 - o.beta1);
    v.mul_(o.beta2).addcmul_(g, g, 1 - o.beta2);
    at::sqrt_out(denom, v).div_(std::sqrt(bc2)).add_(o.eps);
    p.addcdiv_(m, denom, -lr / bc1);
  }
}

void adamw_step(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o, double lr) {
  adamw_step(a, param, grad, o, lr, param.is_cuda());
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
