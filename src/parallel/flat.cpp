// parallel/flat.cpp: see flat.h.
#include "parallel/flat.h"

#include <torch/torch.h>

namespace slm::parallel {

FlatLayout make_layout(const std::vector<std::pair<std::string, at::Tensor>>& named, int shards) {
  FlatLayout l;
  for (const auto& [name, p] : named) {
    l.names.push_back(name);
    l.shapes.push_back(p.sizes().vec());
    l.offsets.push_back(l.numel);
    l.numels.push_back(p.numel());
    l.numel += p.numel();
  }
  const int64_t unit = 64 * shards;  // keeps every shard 256-byte aligned
  l.padded = (l.numel + unit - 1) / unit * unit;
  return l;
}

ShardInfo shard_of(const FlatLayout& l, int rank, int shards) {
  const int64_t size = l.padded / shards;
  return {rank * size, size};
}

std::vector<at::Tensor> views_of(const at::Tensor& flat, const FlatLayout& l) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < l.names.size(); ++i) out.push_back(flat.narrow(0, l.offsets[i], l.numels[i]).view(l.shapes[i]));
  return out;
}

at::Tensor flatten_parameters(const std::vector<at::Tensor>& params, const FlatLayout& l) {
  TORCH_CHECK(params.size() == l.names.size(), "flatten_parameters: ", params.size(), " parameters, layout has ",
              l.names.size());
  at::Tensor flat = at::zeros({l.padded}, params.at(0).options().requires_grad(false));
  std::vector<at::Tensor> views = views_of(flat, l);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    views[i].copy_(params[i]);
    at::Tensor p = params[i];
    p.set_data(views[i]);
  }
  return flat;
}

}  // namespace slm::parallel
