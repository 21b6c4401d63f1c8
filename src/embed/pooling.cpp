// embed/pooling.cpp: see pooling.h. One weight matrix (B, T) covers all three poolings.
#include "embed/pooling.h"

#include <torch/torch.h>

#include "util/error.h"

namespace slm::embed {

Pooling parse_pooling(const std::string& name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "last") return Pooling::kLast;
  if (name == "weighted-mean") return Pooling::kWeightedMean;
  throw UserError("pooling '" + name + "' is not mean, last or weighted-mean");
}

std::string pooling_name(Pooling p) {
  return p == Pooling::kMean ? "mean" : p == Pooling::kLast ? "last" : "weighted-mean";
}

at::Tensor pool(const at::Tensor& hidden, const std::vector<int64_t>& lengths, Pooling p) {
  const int64_t B = hidden.size(0), T = hidden.size(1);
  at::Tensor w = torch::zeros({B, T}, torch::kFloat);
  auto a = w.accessor<float, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = lengths[static_cast<size_t>(b)];
    if (p == Pooling::kLast) {
      a[b][len - 1] = 1.0f;
      continue;
    }
    for (int64_t t = 1; t < len; ++t) a[b][t] = p == Pooling::kMean ? 1.0f : static_cast<float>(t);
  }
  w = (w / w.sum(1, true)).to(hidden.device());
  at::Tensor v = torch::bmm(w.unsqueeze(1), hidden.to(torch::kFloat)).squeeze(1);  // (B, C)
  return torch::nn::functional::normalize(v, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

}  // namespace slm::embed
