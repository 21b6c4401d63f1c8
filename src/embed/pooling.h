// embed/pooling.h: one vector per window from the model's final hidden states.
// Owns: Pooling (mean, last, weighted-mean), its names, and pool(). The hidden states are those
// after the final LayerNorm; position 0 (the window's leading end-of-text token) is left out of
// the averages. Vectors come back L2-normalised, so inner product = cosine similarity.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace slm::embed {

enum class Pooling { kMean, kLast, kWeightedMean };

Pooling parse_pooling(const std::string& name);  // "mean" | "last" | "weighted-mean"; else UserError
std::string pooling_name(Pooling p);

// hidden (B, T, C), right-padded; lengths[b] = real tokens of row b (the leading eot included,
// >= 2). mean: average of positions 1..len-1; last: position len-1; weighted-mean: positions
// 1..len-1 weighted 1, 2, ..., len-1 (later tokens have seen more of the text; as SGPT). -> (B, C)
// fp32 on hidden's device, each row of unit length; differentiable (contrastive tuning).
at::Tensor pool(const at::Tensor& hidden, const std::vector<int64_t>& lengths, Pooling p);

}  // namespace slm::embed
