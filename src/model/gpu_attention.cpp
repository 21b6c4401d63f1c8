// model/gpu_attention.cpp: see gpu_attention.h.
#include "model/gpu_attention.h"

#include <torch/torch.h>
#include <torch/cuda.h>
#include "util/torch_compat.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "host/rng_state.h"
#include "model/attention_choice.h"
#include "model/recompute.h"
#include "util/cache_dir.h"

namespace slm::model {
namespace {

struct Settings {
  std::vector<std::string> candidates = attention_candidates("auto");
  std::string gpu = "gpu";
  std::unique_ptr<AttentionChoices> choices = std::make_unique<AttentionChoices>("");
};
Settings& settings() {
  static Settings s;
  return s;
}

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout) {
#if SLM_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, {}, dropout, /*is_causal=*/true);
#else
  TORCH_CHECK(false, "gpu_attention needs LibTorch 2.0 or later");
#endif
}

#if SLM_TORCH_AT_LEAST(2, 6)
const std::vector<std::pair<std::string, at::SDPBackend>> kBackends = {
    {"cudnn", at::SDPBackend::cudnn_attention}, {"flash", at::SDPBackend::flash_attention},
    {"efficient", at::SDPBackend::efficient_attention}, {"math", at::SDPBackend::math}};

at::SDPBackend backend_of(const std::string& name) {
  for (const auto& [n, b] : kBackends)
    if (n == name) return b;
  return at::SDPBackend::math;
}

// Which kernels SDPA may use, saved and restored around a measurement of one of them.
struct EnabledKernels {
  bool flash, efficient, math, cudnn;
  static EnabledKernels now() {
    const at::Context& c = at::globalContext();
    return {c.userEnabledFlashSDP(), c.userEnabledMemEfficientSDP(), c.userEnabledMathSDP(), c.userEnabledCuDNNSDP()};
  }
  void apply() const {
    at::Context& c = at::globalContext();
    c.setSDPUseFlash(flash), c.setSDPUseMemEfficient(efficient), c.setSDPUseMath(math), c.setSDPUseCuDNN(cudnn);
  }
};

// Milliseconds per forward (+ backward when training) of `name` alone on q's shape; -1 when it
// cannot run it.
double time_kernel(const std::string& name, const at::Tensor& q, double dropout, bool train) {
  const EnabledKernels was = EnabledKernels::now();
  EnabledKernels{name == "flash", name == "efficient", name == "math", name == "cudnn"}.apply();
  double ms = -1;
  try {
    AutocastOff no_autocast;  // q's dtype is the one training runs attention in
    torch::AutoGradMode grad(train);
    const host::KeepRng keep(q.device());  // its inputs and dropout leave the run's masks as they were
    const at::Tensor a = at::randn(q.sizes(), q.options()).requires_grad_(train);
    const at::Tensor b = at::randn(q.sizes(), q.options()).requires_grad_(train);
    const at::Tensor c = at::randn(q.sizes(), q.options()).requires_grad_(train);
    const at::Tensor dy = at::randn(q.sizes(), q.options());
    auto once = [&] {
      at::Tensor y = sdpa(a, b, c, train ? dropout : 0.0);
      if (train) y.backward(dy);
    };
    once();  // warm-up, and whether it runs at all
    torch::cuda::synchronize();
    constexpr int kRuns = 3;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRuns; ++i) once();
    torch::cuda::synchronize();
    ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kRuns;
  } catch (const c10::Error&) {  // "No available kernel", or one refusing the shape
  }
  was.apply();
  return ms;
}

// The kernel for q's shape: cached, or measured now (one line on stderr).
std::string choose(const at::Tensor& q, double dropout, bool train) {
  Settings& s = settings();
  if (s.candidates.size() <= 1) return s.candidates.empty() ? "" : s.candidates.front();
  const std::string key = attention_key(s.gpu, TORCH_VERSION, q.size(0), q.size(1), q.size(2), q.size(3),
                                        std::string(c10::toString(q.scalar_type())), train);
  if (const auto known = s.choices->find(key)) return *known;
  std::vector<AttentionTiming> timings;
  for (const std::string& name : s.candidates) timings.push_back({name, time_kernel(name, q, dropout, train)});
  const std::string best = fastest_attention(timings);
  std::fprintf(stderr, "attention: %s\n", describe_attention_choice(key, timings, best).c_str());
  s.choices->remember(key, best);
  return best;
}

// LibTorch's order with `first` moved to the front.
void put_first(const std::string& first) {
  std::vector<int64_t> order{static_cast<int64_t>(backend_of(first))};
  for (at::SDPBackend b : at::globalContext().sDPPriorityOrder())
    if (b != backend_of(first)) order.push_back(static_cast<int64_t>(b));
  at::globalContext().setSDPPriorityOrder(order);
}
#endif

}  // namespace

void set_gpu_attention(const std::string& setting, const std::string& gpu_name) {
  Settings& s = settings();
  s.candidates = attention_candidates(setting);
  s.gpu = gpu_name.empty() ? "gpu" : gpu_name;
  std::string file;
  if (!gpu_name.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cache_dir(), ec);
    if (!ec) file = cache_dir() + "/attention.json";
  }
  s.choices = std::make_unique<AttentionChoices>(file);
}

at::Tensor gpu_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout, bool train) {
  const double p = train ? dropout : 0.0;
#if SLM_TORCH_AT_LEAST(2, 6)
  // Keyed by the model's mode, not by grad mode: recomputation runs a training forward without
  // gradients, then again inside the backward pass, and both must find the choice already made.
  const std::string chosen = choose(q, p, train);
  if (!chosen.empty()) put_first(chosen);
#endif
  return sdpa(q, k, v, p);
}

}  // namespace slm::model
