// parallel/tensor/mappings.cpp: see mappings.h.
#include "parallel/tensor/mappings.h"

#include <torch/torch.h>

#include "comm/collectives.h"
#include "util/trace.h"

namespace slm::parallel::tensor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

const comm::Group& group_of(AutogradContext* ctx) {
  return *reinterpret_cast<const comm::Group*>(ctx->saved_data["tp"].toInt());
}

at::Tensor summed(const at::Tensor& x, const comm::Group& tp) {
  at::Tensor y = x.contiguous().clone();
  trace::Span span("tp all-reduce", trace::kInside);
  comm::all_reduce_sum(y, tp);
  return y;
}

struct CopyToTp : torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t tp) {
    ctx->saved_data["tp"] = tp;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {summed(g[0], group_of(ctx)), at::Tensor()};
  }
};

struct ReduceFromTp : torch::autograd::Function<ReduceFromTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t tp) {
    return summed(x, *reinterpret_cast<const comm::Group*>(tp));
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], at::Tensor()}; }
};

int64_t ptr(const comm::Group& g) { return reinterpret_cast<int64_t>(&g); }

}  // namespace

at::Tensor copy_to_tp(const at::Tensor& x, const comm::Group& tp) {
  return tp.size == 1 ? x : CopyToTp::apply(x, ptr(tp));
}

at::Tensor reduce_from_tp(const at::Tensor& x, const comm::Group& tp) {
  return tp.size == 1 ? x : ReduceFromTp::apply(x, ptr(tp));
}

}  // namespace slm::parallel::tensor
