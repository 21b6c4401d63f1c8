// parallel/batch_gather.cpp: see batch_gather.h.
#include "parallel/batch_gather.h"

#include <torch/torch.h>

#include "comm/collectives.h"

namespace slm::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GatherRows : torch::autograd::Function<GatherRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& local, int64_t group) {
    const comm::Group& g = *reinterpret_cast<const comm::Group*>(group);
    ctx->saved_data["rank"] = static_cast<int64_t>(g.rank);
    ctx->saved_data["rows"] = local.size(0);
    at::Tensor shard = local.contiguous().view({-1});
    at::Tensor all = torch::empty({shard.numel() * g.size}, shard.options());
    comm::all_gather_into(all, shard, g);
    std::vector<int64_t> shape(local.sizes().begin(), local.sizes().end());
    shape[0] *= g.size;
    return all.view(shape);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const int64_t rows = ctx->saved_data["rows"].toInt(), rank = ctx->saved_data["rank"].toInt();
    return {grad[0].narrow(0, rank * rows, rows).contiguous(), at::Tensor()};
  }
};

}  // namespace

at::Tensor gather_rows(const at::Tensor& local, const comm::Group& g) {
  return g.size == 1 ? local : GatherRows::apply(local, reinterpret_cast<int64_t>(&g));
}

void sum_gradients(const std::vector<at::Tensor>& params, const comm::Group& g) {
  if (g.size == 1 || params.empty()) return;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params)
    grads.push_back(p.grad().defined() ? p.grad().reshape({-1}) : torch::zeros({p.numel()}, p.options()));
  at::Tensor flat = torch::cat(grads);
  comm::all_reduce_sum(flat, g);
  int64_t off = 0;
  for (const at::Tensor& p : params) {
    at::Tensor part = flat.narrow(0, off, p.numel()).view_as(p);
    if (p.grad().defined()) p.mutable_grad().copy_(part);
    else p.mutable_grad() = part.clone();
    off += p.numel();
  }
}

}  // namespace slm::parallel
