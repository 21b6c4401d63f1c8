// train/optim.cpp: see optim.h.
#include "train/optim.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

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

namespace {

// The whole update of [begin, end) in one pass over memory: decay, both moments, the step. Plain
// float arithmetic that the compiler vectorises for the build's baseline ISA; every element takes
// the same operations (no fused multiply-add on x86-64's baseline), so the result does not depend
// on how the range is split into threads or ZeRO shards.
void adamw_range(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end, float decay, float b1,
                 float b2, float step_size, float inv_sqrt_bc2, float eps) {
  const float c1 = 1 - b1, c2 = 1 - b2;
  for (int64_t i = begin; i < end; ++i) {
    const float gi = g[i];
    const float mi = m[i] * b1 + c1 * gi, vi = v[i] * b2 + c2 * (gi * gi);
    m[i] = mi, v[i] = vi;
    p[i] = p[i] * decay - step_size * (mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps));
  }
}

// AdamW on contiguous fp32 CPU tensors, the threads splitting the range: one pass instead of the
// ~7 passes of the ATen ops per chunk (AMX Xeon VM, 2 cores, 4.3M parameters: 50 ms -> 13 ms a step).
bool adamw_cpu(AdamW& a, at::Tensor& param, const at::Tensor& grad, const OptimConfig& o, double lr, double bc1,
               double bc2) {
  const auto ok = [&](const at::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.numel() == param.numel();
  };
  if (!ok(param) || !ok(grad) || !ok(a.exp_avg) || !ok(a.exp_avg_sq)) return false;
  // [lo, hi, decay factor] pieces covering the whole buffer, in order
  std::vector<std::pair<int64_t, int64_t>> decayed = a.decay;
  std::sort(decayed.begin(), decayed.end());
  const float wd = static_cast<float>(1 - lr * o.weight_decay);
  std::vector<std::tuple<int64_t, int64_t, float>> pieces;
  int64_t at = 0;
  for (auto [lo, hi] : decayed) {
    lo = std::max(lo, at);
    if (lo >= hi) continue;
    if (at < lo) pieces.emplace_back(at, lo, 1.0f);
    pieces.emplace_back(lo, hi, o.weight_decay != 0 ? wd : 1.0f);
    at = hi;
  }
  if (at < param.numel()) pieces.emplace_back(at, param.numel(), 1.0f);
  float *p = param.data_ptr<float>(), *m = a.exp_avg.data_ptr<float>(), *v = a.exp_avg_sq.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  const auto b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2), eps = static_cast<float>(o.eps);
  const auto step_size = static_cast<float>(lr / bc1), inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
  at::parallel_for(0, param.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (const auto& [lo, hi, decay] : pieces)
      if (lo < e && hi > b)
        adamw_range(p, g, m, v, std::max(lo, b), std::min(hi, e), decay, b1, b2, step_size, inv_sqrt_bc2, eps);
  });
  return true;
}

}  // namespace

void adamw_step(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o, double lr, AdamKernel kernel) {
  torch::NoGradGuard no_grad;
  a.step += 1;
  const bool one_pass = kernel == AdamKernel::one_pass || (kernel == AdamKernel::automatic && !param.is_cuda());
  const bool fused = kernel == AdamKernel::libtorch_fused || (kernel == AdamKernel::automatic && param.is_cuda());
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(a.step));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(a.step));
  if (o.name != "sgd" && one_pass && adamw_cpu(a, param, grad, o, lr, bc1, bc2)) return;
  if (o.weight_decay != 0)
    for (auto [lo, hi] : a.decay) param.narrow(0, lo, hi - lo).mul_(1 - lr * o.weight_decay);
  if (o.name == "sgd") {
    param.add_(grad, -lr);
    return;
  }
  if (fused && compat::fused_adam(param, grad, a.exp_avg, a.exp_avg_sq, a.step, lr, o.beta1, o.beta2, o.eps)) return;
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
