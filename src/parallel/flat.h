// parallel/flat.h: all parameters (and their gradients) as one flat fp32 vector, and a rank's
// shard of it. Owns: FlatLayout, ShardInfo, make_layout, shard_of, flatten_parameters.
// Allocating once and viewing (llm.c style) makes the optimizer one fused pass, lets gradients be
// reduced in contiguous buckets, and gives ZeRO a shard that is just a range. The layout depends
// only on the parameter list and the shard count (padding), so checkpoints can be resharded.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace slm::parallel {

struct FlatLayout {
  std::vector<std::string> names;             // parameter names (named_parameters order)
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> offsets, numels;       // position of each parameter in the flat vector
  int64_t numel = 0;                          // sum of numels
  int64_t padded = 0;                         // numel rounded up to a multiple of 64 * shards
};

struct ShardInfo {
  int64_t offset = 0, size = 0;  // a range of the padded flat vector
};

// A piece of a rank's own buffer (optimizer range) and where it sits in the flat vector.
struct Segment {
  int64_t local = 0;   // offset in the rank's buffer
  int64_t global = 0;  // offset in the (unpadded) flat vector
  int64_t size = 0;
};

FlatLayout make_layout(const std::vector<std::pair<std::string, at::Tensor>>& named, int shards);
// Rank r's range of `shards` equal ranges of the padded vector.
ShardInfo shard_of(const FlatLayout& l, int rank, int shards);
// Copies every parameter into one new flat buffer (padded) on the parameters' device and makes
// each parameter a view of it (autograd identity preserved). Returns the buffer (padded).
at::Tensor flatten_parameters(const std::vector<at::Tensor>& params, const FlatLayout& l);
// Views of the parameters' ranges of `flat` with their shapes (e.g. gradients of a flat buffer).
std::vector<at::Tensor> views_of(const at::Tensor& flat, const FlatLayout& l);

}  // namespace slm::parallel
