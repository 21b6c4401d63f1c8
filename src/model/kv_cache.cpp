// model/kv_cache.cpp: see kv_cache.h.
#include "model/kv_cache.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace slm::model {

at::Tensor forward_cached(const GPT2& m, KvCache& cache, const at::Tensor& idx) {
  torch::NoGradGuard no_grad;
  const int64_t t = idx.size(1), first = cache.len;
  cache.k.resize(m.h.size());
  cache.v.resize(m.h.size());
  // Query i (position first + i) sees the keys up to its own position: the cached ones and the new up to i.
  const at::Tensor future = at::ones({t, first + t}, idx.options().dtype(at::kBool)).triu(first + 1);
  at::Tensor x = embed(m, idx, false, first), d;
  for (size_t l = 0; l < m.h.size(); ++l) {
    const Attend attend = [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
      cache.k[l] = first > 0 ? at::cat({cache.k[l], k}, 2) : k.contiguous();
      cache.v[l] = first > 0 ? at::cat({cache.v[l], v}, 2) : v.contiguous();
      at::Tensor att = at::matmul(q, cache.k[l].transpose(-2, -1)) * (1.0 / std::sqrt(double(q.size(-1))));
      att = at::softmax(att.masked_fill(future, -std::numeric_limits<float>::infinity()), -1);
      return at::matmul(att, cache.v[l]);
    };
    std::tie(x, d) = block_forward_deferred(m.h[l], x, d, m.cfg, false, attend);
  }
  cache.len = first + t;
  const at::Tensor last = (d.defined() ? x + d : x).narrow(1, t - 1, 1);  // (1, 1, C)
  return head_logits(m, last)[0][0];
}

}  // namespace slm::model
