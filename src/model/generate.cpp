// model/generate.cpp: see generate.h.
#include "model/generate.h"

#include <torch/torch.h>

#include <cmath>
#include <fmt/format.h>
#include <string>

#include "model/kv_cache.h"
#include "util/error.h"

namespace slm::model {

void validate(const SampleOptions& o) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw UserError("generate: " + what);
  };
  need(o.max_new_tokens >= 0, fmt::format("--max-tokens {} must be at least 0", o.max_new_tokens));
  need(std::isfinite(o.temperature) && o.temperature >= 0,
       fmt::format("--temperature {} must be a finite number >= 0 (0 = greedy)", o.temperature));
  need(o.top_k >= 0, fmt::format("--top-k {} must be at least 0 (0 = all tokens)", o.top_k));
  need(std::isfinite(o.top_p) && o.top_p > 0 && o.top_p <= 1,
       fmt::format("--top-p {} must be in (0, 1] (1 = all tokens)", o.top_p));
}

std::vector<int64_t> generate(const GPT2& m, const std::vector<int64_t>& prompt, const SampleOptions& o) {
  validate(o);
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(o.seed);
  std::vector<int64_t> ctx = prompt, out, fresh = prompt;  // fresh: the tokens the cache lacks
  KvCache cache;
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    if (cache.len + static_cast<int64_t>(fresh.size()) > m.cfg.block_size) {  // the window slides: positions move
      cache = KvCache{};
      fresh.assign(ctx.end() - std::min<int64_t>(static_cast<int64_t>(ctx.size()), m.cfg.block_size), ctx.end());
    }
    at::Tensor idx = torch::tensor(fresh, torch::kLong).view({1, -1}).to(m.wte.device());
    at::Tensor logits = forward_cached(m, cache, idx).to(at::kCPU, at::kFloat);  // (V)
    if (!logits.isfinite().all().item<bool>())
      throw UserError("the model's outputs are not finite (its weights diverged?); nothing to sample from");
    int64_t next;
    if (o.temperature <= 0) {
      next = logits.argmax().item<int64_t>();
    } else {
      logits = logits / o.temperature;
      if (o.top_k > 0 && o.top_k < logits.size(0)) {
        at::Tensor kth = std::get<0>(logits.topk(o.top_k)).min();
        logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
      }
      at::Tensor probs = logits.softmax(0);
      if (o.top_p < 1.0) {
        auto [sorted, order] = probs.sort(0, /*descending=*/true);
        at::Tensor before = sorted.cumsum(0) - sorted;  // mass of the more likely tokens
        sorted = sorted.masked_fill(before >= o.top_p, 0.0);
        probs = at::zeros_like(probs).scatter(0, order, sorted);
      }
      next = at::multinomial(probs, 1, false, gen).item<int64_t>();
    }
    out.push_back(next);
    ctx.push_back(next);
    fresh = {next};
    if (next == o.stop_token) break;
  }
  return out;
}

}  // namespace slm::model
