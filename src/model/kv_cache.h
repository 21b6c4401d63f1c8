// model/kv_cache.h: decoding with cached keys and values: each new token's forward attends to the
// keys and values the earlier positions left, instead of running the whole context again (a token
// costs one position's forward, not the context's).
// Owns: KvCache, forward_cached.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/gpt2.h"

namespace slm::model {

struct KvCache {
  std::vector<at::Tensor> k, v;  // per block: (1, H, len, hd)
  int64_t len = 0;               // positions held
};

// The logits (V) after the last of idx's tokens (1, t), which take the positions after the cache's
// (len + t <= block_size); appends their keys and values. With an empty cache and all of a context,
// the same logits as forward_logits's last position. No autograd (inference).
at::Tensor forward_cached(const GPT2& m, KvCache& cache, const at::Tensor& idx);

}  // namespace slm::model
