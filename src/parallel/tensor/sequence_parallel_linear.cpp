// parallel/tensor/sequence_parallel_linear.cpp: see sequence_parallel_linear.h.
#include "parallel/tensor/sequence_parallel_linear.h"

#include <torch/torch.h>
#include <c10/util/Optional.h>

#include "model/autocast.h"
#include "parallel/tensor/mappings.h"

namespace slm::parallel::tensor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor cast(const at::Tensor& t, at::ScalarType dtype) { return t.defined() ? t.to(dtype) : t; }

// b is an optional (absent: no bias, as fc_gelu asks for): autograd takes no undefined tensor as
// an input.
struct SequenceParallelLinear : torch::autograd::Function<SequenceParallelLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& local, const at::Tensor& w,
                            const c10::optional<at::Tensor>& b_opt, int64_t seq_len, int64_t group) {
    const at::Tensor b = b_opt.has_value() ? *b_opt : at::Tensor();
    const comm::Group& tp = *reinterpret_cast<const comm::Group*>(group);
    const at::ScalarType dtype = model::compute_dtype(local);  // autocast's, as the linear would cast to
    const at::Tensor x = local.to(dtype);  // this rank's rows, all that backward keeps
    ctx->saved_data["tp"] = group;
    ctx->saved_data["x"] = x;
    ctx->saved_data["shape"] = local.sizes().vec();
    ctx->saved_data["local_dtype"] = static_cast<int64_t>(local.scalar_type());
    ctx->save_for_backward({w, b});
    const at::Tensor y = at::linear(all_gathered_rows(x, tp), cast(w, dtype), cast(b, dtype));
    return y.view({-1, seq_len, y.size(-1)});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const comm::Group& tp = *reinterpret_cast<const comm::Group*>(ctx->saved_data["tp"].toInt());
    const at::Tensor x = ctx->saved_data["x"].toTensor();
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &w = saved[0], &b = saved[1];
    const at::Tensor gy = grads[0].reshape({-1, grads[0].size(-1)}).to(x.scalar_type());  // (N, out)
    const at::Tensor whole = all_gathered_rows(x, tp);                                     // gathered again
    const auto local_dtype = static_cast<at::ScalarType>(ctx->saved_data["local_dtype"].toInt());
    // As autocast's linear: the products in the compute dtype, each gradient then cast to its
    // tensor's dtype; the input's summed over tp in local's dtype.
    const at::Tensor gx = reduce_scattered_rows(gy.mm(w.to(x.scalar_type())).to(local_dtype), tp);
    const at::Tensor gw = gy.t().mm(whole).to(w.scalar_type());
    const at::Tensor gb = b.defined() ? gy.sum(0).to(b.scalar_type()) : at::Tensor();
    return {gx.view(ctx->saved_data["shape"].toIntVector()), gw, gb, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor sequence_parallel_linear(const at::Tensor& local, const at::Tensor& w, const at::Tensor& b, int64_t seq_len,
                                    const comm::Group& tp) {
  const c10::optional<at::Tensor> b_opt = b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt;
  return SequenceParallelLinear::apply(local, w, b_opt, seq_len, reinterpret_cast<int64_t>(&tp));
}

}  // namespace slm::parallel::tensor
