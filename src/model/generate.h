// model/generate.h: sampling text from a GPT2 (autoregressive; each token's forward reads the
// earlier positions' keys and values from a cache, model/kv_cache.h, until the context is longer
// than block_size: then the window of the last block_size tokens is run again for each token).
// Owns: SampleOptions, its validation and generate.
#pragma once
#include <cstdint>
#include <vector>

#include "model/gpt2.h"

namespace slm::model {

struct SampleOptions {
  int64_t max_new_tokens = 100;
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // keep the k most likely tokens (0 = all)
  double top_p = 1.0;        // keep the smallest set with this much probability (1 = all)
  uint64_t seed = 1337;
  int64_t stop_token = -1;   // stop after sampling this id (e.g. <|endoftext|>); -1 = never
};

// UserError (one line, naming the option) unless max_new_tokens >= 0, temperature finite and
// >= 0, top_k >= 0 and top_p in (0, 1].
void validate(const SampleOptions& o);
// Continues `prompt` (at least one id); returns only the new ids. The context is cropped to the
// model's block_size. Validates o first.
std::vector<int64_t> generate(const GPT2& m, const std::vector<int64_t>& prompt, const SampleOptions& o);

}  // namespace slm::model
