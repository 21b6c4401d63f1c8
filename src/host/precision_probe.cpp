// host/precision_probe.cpp: see precision_probe.h.
#include "host/precision_probe.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <vector>

#include "host/cpu_share.h"
#include "host/hardware.h"
#include "host/rng_state.h"
#include "host/runtime.h"
#include "model/autocast.h"
#include "util/measure_cache.h"

namespace slm::host {
namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double time_step_parts(const model::GPT2Config& shape, int64_t b, int64_t T, const std::string& precision,
                       double enough) {
  model::GPT2Config c = shape;
  c.n_layer = 1, c.dropout = 0;
  model::GPT2 m = model::init_gpt2(c, 1);
  const KeepRng keep;  // its random inputs leave the run's generators as they were
  at::Tensor x = torch::randn({b, T, c.n_embd}).requires_grad_(true), g = torch::randn({b, T, c.n_embd});
  at::Tensor idx = torch::randint(c.vocab_size, {b, T}, torch::kLong);
  model::AutocastGuard autocast(precision, "cpu");
  return best_time(
      [&] {
        model::block_forward(m.h[0], x, c, true).backward(g);
        model::head_loss(m, x, idx).backward();
      },
      enough);
}

}  // namespace

double best_time(const std::function<void()>& f, double enough) {
  const double first = seconds_of(f);
  if (first > enough) return first;
  double best = 1e30;
  for (int i = 0; i < 3; ++i) best = std::min(best, seconds_of(f));
  return best;
}

int64_t probe_micro_batch(int64_t micro_batch) { return std::clamp<int64_t>(micro_batch, 1, 4); }

PrecisionTiming time_precisions(const model::GPT2Config& shape, int64_t micro_batch, int64_t seq_len) {
  model::GPT2Config m = shape;
  if (m.vocab_size <= 0) m.vocab_size = 50257;  // no dataset yet (planning): GPT-2's vocabulary
  PrecisionTiming t;
  t.micro_batch = probe_micro_batch(micro_batch);
  // " | measured alone": entries from before busy timings were kept out (host/cpu_share.h) are not read
  const std::string key = fmt::format("{} x{} threads | {} | C {} H {} Vp {} T {} B {} | measured alone",
                                      cpu_model_name(), torch::get_num_threads(), measurement_context(), m.n_embd,
                                      m.n_head, m.padded_vocab(), seq_len, t.micro_batch);
  if (const auto c = cached_measurement("precision.json", key);
      c && c->is_object() && c->contains("fp32_s") && c->contains("bf16_s")) {
    t.fp32_s = c->at("fp32_s").get<double>(), t.bf16_s = c->at("bf16_s").get<double>();
    t.source = "cached";
    return t;
  }
  const CpuClock before = cpu_clock();
  t.fp32_s = time_step_parts(m, t.micro_batch, seq_len, "fp32", kNoLimit);
  // bf16 emulated (a CPU without bf16 instructions: 25-100x fp32's time, 30-80 s a run at GPT-2's
  // vocabulary on 2 AVX2 cores) has lost after its first run; the second covers a first call's set-up.
  t.bf16_s = time_step_parts(m, t.micro_batch, seq_len, "bf16", 4 * t.fp32_s + 1.0);
  // Another job beside one half of the probe would decide every later run's precision: not kept.
  if (const double share = cpu_share(before, cpu_clock(), torch::get_num_threads()); share < kAloneCpuShare) {
    t.source = "measured now" + busy_note(share) + ": not cached";
    return t;
  }
  store_measurement("precision.json", key, {{"fp32_s", t.fp32_s}, {"bf16_s", t.bf16_s}});
  return t;
}

}  // namespace slm::host
