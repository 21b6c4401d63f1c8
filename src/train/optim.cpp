// train/optim.cpp: see optim.h.
#include "train/optim.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
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

struct Piece {
  int64_t lo, hi;
  bool decayed;
};

// [lo, hi) pieces covering [0, n) in order, each decayed (in a.decay) or not.
std::vector<Piece> pieces_of(const AdamW& a, int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> decayed = a.decay;
  std::sort(decayed.begin(), decayed.end());
  std::vector<Piece> pieces;
  int64_t at = 0;
  for (auto [lo, hi] : decayed) {
    lo = std::max(lo, at);
    if (lo >= hi) continue;
    if (at < lo) pieces.push_back({at, lo, false});
    pieces.push_back({lo, hi, true});
    at = hi;
  }
  if (at < n) pieces.push_back({at, n, false});
  return pieces;
}

// LibTorch's fused kernel, one launch for the decayed pieces and one for the others (views of the
// buffers), the decay inside; its number in `step` (0-dim fp32 on param's device), the learning
// rate `lr` a double or such a tensor (compat::fused_adamw). With found_inf, the kernel skips the
// update where it is 1 (no host sync).
template <typename Lr>
void fused_update(AdamW& a, const at::Tensor& param, const at::Tensor& grad, const OptimConfig& o,
                  const at::Tensor& step, const Lr& lr, const at::Tensor& found_inf) {
  std::vector<at::Tensor> p[2], g[2], m[2], v[2];  // [1]: the decayed pieces
  for (const Piece& c : pieces_of(a, param.numel())) {
    const int k = c.decayed ? 1 : 0;
    const int64_t len = c.hi - c.lo;
    p[k].push_back(param.narrow(0, c.lo, len)), g[k].push_back(grad.narrow(0, c.lo, len));
    m[k].push_back(a.exp_avg.narrow(0, c.lo, len)), v[k].push_back(a.exp_avg_sq.narrow(0, c.lo, len));
  }
  for (int k = 0; k < 2; ++k)
    if (!p[k].empty())
      compat::fused_adamw(p[k], g[k], m[k], v[k], step, lr, o.beta1, o.beta2, k == 1 ? o.weight_decay : 0.0, o.eps,
                          found_inf);
}

// fused_update at a.step and lr. False where this LibTorch has no fused AdamW.
bool adamw_fused(AdamW& a, at::Tensor& param, const at::Tensor& grad, const OptimConfig& o, double lr,
                 const at::Tensor& found_inf) {
  if (!compat::kHasFusedAdam) return false;
  const at::Tensor step = at::full({}, static_cast<double>(a.step), param.options().dtype(at::kFloat));
  fused_update(a, param, grad, o, step, lr, found_inf);
  return true;
}

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
  const float wd = static_cast<float>(1 - lr * o.weight_decay);
  std::vector<std::tuple<int64_t, int64_t, float>> pieces;  // [lo, hi, decay factor]
  for (const Piece& c : pieces_of(a, param.numel())) pieces.emplace_back(c.lo, c.hi, c.decayed && o.weight_decay != 0 ? wd : 1.0f);
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

void adamw_step(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o, double lr, AdamKernel kernel,
                const at::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  a.step += 1;
  const bool one_pass = kernel == AdamKernel::one_pass || (kernel == AdamKernel::automatic && !param.is_cuda());
  const bool fused = found_inf.defined() || kernel == AdamKernel::libtorch_fused ||
                     (kernel == AdamKernel::automatic && param.is_cuda());
  if (found_inf.defined() && (o.name == "sgd" || !compat::kHasFusedAdam))
    throw std::logic_error("adamw_step: a device-side skip needs AdamW and LibTorch's fused kernel");
  if (o.name != "sgd" && fused && adamw_fused(a, param, grad, o, lr, found_inf)) return;
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(a.step));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(a.step));
  if (o.name != "sgd" && one_pass && adamw_cpu(a, param, grad, o, lr, bc1, bc2)) return;
  if (o.weight_decay != 0)
    for (auto [lo, hi] : a.decay) param.narrow(0, lo, hi - lo).mul_(1 - lr * o.weight_decay);
  if (o.name == "sgd") {
    param.add_(grad, -lr);
    return;
  }
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

void adamw_step_by_tensors(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o,
                           const at::Tensor& lr, const at::Tensor& step, const at::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  if (o.name == "sgd" || !compat::kHasFusedAdam)
    throw std::logic_error("adamw_step_by_tensors: it needs AdamW and LibTorch's fused kernel");
  fused_update(a, param, grad, o, step, lr, found_inf);
}

// The first step of the decay: where warmup ends, or decay_ratio of max_steps before the end.
static int64_t decay_start(const ScheduleConfig& s) {
  if (s.decay_ratio <= 0) return s.warmup_steps;
  return std::max<int64_t>(s.warmup_steps,
                           s.max_steps - std::llround(s.decay_ratio * static_cast<double>(s.max_steps)));
}

double lr_at(const ScheduleConfig& s, double peak, int64_t step) {
  if (step < s.warmup_steps) return peak * static_cast<double>(step + 1) / s.warmup_steps;
  const int64_t start = decay_start(s);
  if (s.decay == "constant" || step < start) return peak;
  const double floor = peak * s.min_lr_ratio;
  const int64_t span = std::max<int64_t>(1, s.max_steps - start);
  const double t = std::min(1.0, static_cast<double>(step - start) / span);
  const double shape = s.decay == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * t))
                       : s.decay == "sqrt" ? 1.0 - std::sqrt(t)
                                           : 1.0 - t;
  return floor + (peak - floor) * shape;
}

}  // namespace slm::train
