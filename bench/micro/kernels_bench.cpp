// bench/micro/kernels_bench.cpp: the model's CPU kernels against the ATen paths they replace,
// forward + backward, alternating, median of repeats: causal attention (row kernels vs SDPA / the
// math path), the head + cross-entropy (fused vs linear + cross_entropy), the MLP's bias + GELU
// (ours: one pass each way, the bias gradient in the backward's; ATen: the add, gelu, the bias
// gradient's sum) and the residual add + LayerNorm (ours vs add, layer_norm and, under autocast,
// the cast of its output the next linear makes), in fp32 and bf16 autocast, one thread per core.
// Run with slm's environment (OMP_WAIT_POLICY=PASSIVE, ATEN_CPU_CAPABILITY=avx512 where the CPU
// has it, and slm's malloc thresholds: GLIBC_TUNABLES as bench/compare/train_compare.sh sets; without
// them ATen's large buffers are mapped and faulted in on every call, and its side looks slower). The kernels run with the instruction set model/cpu_rows.h picks (AVX-512: fp32 and bf16;
// AVX2: fp32). Usage: bench_kernels [B=8] [H=4] [T=256] [C=256] [V=4096] [repeats=15]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <thread>
#include <vector>

#include "model/causal_attention.h"
#include "model/cpu_rows.h"
#include "util/torch_compat.h"
#include "model/fused_head.h"
#include "model/bias_gelu.h"
#include "model/add_layer_norm.h"
#include "model/autocast.h"

using namespace slm;

// The inputs' gradients unset before a call: in the model they are no leaves that accumulate (a
// bf16 gradient's accumulation is a slow ATen add that would be timed on both sides).
static void fresh(std::initializer_list<at::Tensor> leaves) {
  for (const at::Tensor& t : leaves) t.mutable_grad() = at::Tensor();
}

static double median_ms(const std::function<void()>& f, int repeats) {
  f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  auto arg = [&](int i, int64_t d) { return argc > i ? std::atoll(argv[i]) : d; };
  const int64_t B = arg(1, 8), H = arg(2, 4), T = arg(3, 256), C = arg(4, 256), V = arg(5, 4096);
  const int repeats = static_cast<int>(arg(6, 15));
  at::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));  // as slm does
  const int64_t D = C / H;
  std::printf("B=%ld H=%ld T=%ld C=%ld V=%ld, %d threads\n", B, H, T, C, V, at::get_num_threads());
  for (const char* prec : {"fp32", "bf16"}) {
    const at::ScalarType dt = std::string(prec) == "bf16" ? at::kBFloat16 : at::kFloat;
    if (!model::cpu_rows_take(dt)) {  // bf16 on an AVX2 CPU (model/cpu_rows.h)
      std::printf("%s: slm's CPU kernels do not run in %s on this CPU\n", prec, prec);
      continue;
    }
    auto qkv = [&] { return (torch::randn({B, T, H, D}) * 0.5).to(dt).transpose(1, 2).requires_grad_(true); };
    at::Tensor q = qkv(), k = qkv(), v = qkv();  // non-contiguous views, as the model has
    at::Tensor dy = torch::randn({B, T, H, D}).to(dt).transpose(1, 2);  // as the model's reshape passes it back
    auto att_rows = [&] {
      fresh({q, k, v});
      model::causal_attention_rows(q, k, v).backward(dy);
    };
    auto att_aten = [&] {
      fresh({q, k, v});
#if SLM_TORCH_AT_LEAST(2, 0)
      at::scaled_dot_product_attention(q, k, v, {}, 0.0, true).backward(dy);
#else
      at::Tensor a = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(D)));
      a = at::softmax(a.masked_fill(at::ones({T, T}, at::kBool).triu(1), -INFINITY), -1);
      at::matmul(a, v).backward(dy);
#endif
    };
    at::Tensor x = torch::randn({B * T, C}).requires_grad_(true), w = (torch::randn({V, C}) * 0.02).requires_grad_(true);
    at::Tensor tgt = torch::randint(V, {B * T}, torch::kLong);
    auto head_fused = [&] {
      fresh({x, w});
      model::AutocastGuard g(prec, "cpu");
      model::fused_linear_cross_entropy(x, w, V, tgt).backward();
    };
    auto head_aten = [&] {
      fresh({x, w});
      model::AutocastGuard g(prec, "cpu");
      at::cross_entropy_loss(at::linear(x, w), tgt).backward();
    };
    // The fc matmul's output without its bias (in autocast's dtype), the bias, y's gradient.
    at::Tensor u = torch::randn({B * T, 4 * C}).to(dt).requires_grad_(true), du = torch::randn({B * T, 4 * C}).to(dt);
    at::Tensor ub = torch::randn({4 * C}).requires_grad_(true);
    auto gelu_ours = [&] {
      fresh({u, ub});
      model::bias_gelu(u, ub).backward(du);
    };
    auto gelu_aten = [&] {
      fresh({u, ub});
      at::gelu(u + ub.to(dt), "tanh").backward(du);
    };
    // The residual stream (fp32) plus a block's output (bf16 under autocast), the sum's and the
    // normalised rows' gradients.
    at::Tensor r = torch::randn({B * T, C}).requires_grad_(true), d = torch::randn({B * T, C}).to(dt).requires_grad_(true);
    at::Tensor lw = (torch::randn({C}) + 1).requires_grad_(true), lb = torch::randn({C}).requires_grad_(true);
    at::Tensor gy = torch::randn({B * T, C}).to(dt), gsum = torch::randn({B * T, C});
    auto ln_ours = [&] {
      fresh({r, d, lw, lb});
      model::AutocastGuard g(prec, "cpu");
      auto [s_, y_] = model::add_layer_norm(r, d, lw, lb);
      torch::autograd::backward({s_, y_}, {gsum, gy});
    };
    auto ln_aten = [&] {
      fresh({r, d, lw, lb});
      model::AutocastGuard g(prec, "cpu");
      at::Tensor s_ = r + d, y_ = at::layer_norm(s_, {C}, lw, lb, 1e-5).to(dt);
      torch::autograd::backward({s_, y_}, {gsum, gy});
    };
    double a1 = 0, a2 = 0, h1 = 0, h2 = 0, g1 = 0, g2 = 0, n1 = 0, n2 = 0;
    const bool rows = model::causal_attention_rows_supported(q, k, v);
    for (int round = 0; round < 3; ++round) {  // alternate, keep the best median of each
      a1 = std::max(a1, rows ? 1 / median_ms(att_rows, repeats) : 0), a2 = std::max(a2, 1 / median_ms(att_aten, repeats));
      h1 = std::max(h1, 1 / median_ms(head_fused, repeats)), h2 = std::max(h2, 1 / median_ms(head_aten, repeats));
      g1 = std::max(g1, 1 / median_ms(gelu_ours, repeats)), g2 = std::max(g2, 1 / median_ms(gelu_aten, repeats));
      n1 = std::max(n1, 1 / median_ms(ln_ours, repeats)), n2 = std::max(n2, 1 / median_ms(ln_aten, repeats));
    }
    std::printf("%s fwd+bwd: attention rows %.2f ms, ATen %.2f ms | head+CE fused %.2f ms, ATen %.2f ms | "
                "bias+GELU ours %.2f ms, ATen %.2f ms | add+LayerNorm ours %.2f ms, ATen %.2f ms\n",
                prec, rows ? 1 / a1 : NAN, 1 / a2, 1 / h1, 1 / h2, 1 / g1, 1 / g2, 1 / n1, 1 / n2);
  }
}
