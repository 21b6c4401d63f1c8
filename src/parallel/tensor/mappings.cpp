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

// Token rows: (..., C) as (N, C).
at::Tensor rows(const at::Tensor& x) { return x.reshape({-1, x.size(-1)}); }

// Rows per tp rank of `n` token rows.
int64_t rows_per_rank(int64_t n, const comm::Group& tp) {
  TORCH_CHECK(n % tp.size == 0, "sequence parallelism: ", n, " token rows do not split over tp ", tp.size);
  return n / tp.size;
}

}  // namespace

at::Tensor all_gathered_rows(const at::Tensor& local, const comm::Group& tp) {
  at::Tensor piece = rows(local).contiguous();
  at::Tensor whole = at::empty({piece.size(0) * tp.size, piece.size(1)}, piece.options());
  trace::Span span("tp all-gather", trace::kInside);
  comm::all_gather_into(whole, piece, tp);
  return whole;
}

at::Tensor reduce_scattered_rows(const at::Tensor& partial, const comm::Group& tp) {
  at::Tensor whole = rows(partial).contiguous().clone();  // the Gloo path reduces it in place
  at::Tensor piece = at::empty({rows_per_rank(whole.size(0), tp), whole.size(1)}, whole.options());
  trace::Span span("tp reduce-scatter", trace::kInside);
  comm::reduce_scatter_sum(piece, whole, tp);
  return piece;
}

namespace {

// This rank's rows of (N, C).
at::Tensor own_rows(const at::Tensor& whole, const comm::Group& tp) {
  const at::Tensor r = rows(whole);
  const int64_t n = rows_per_rank(r.size(0), tp);
  return r.narrow(0, tp.rank * n, n).clone();
}

// A collective on token rows as an autograd function: `Forward` on the input, `Backward` on the
// output's gradient, which leaves in the input's shape.
template <at::Tensor (*Forward)(const at::Tensor&, const comm::Group&),
          at::Tensor (*Backward)(const at::Tensor&, const comm::Group&)>
struct RowsFunction : torch::autograd::Function<RowsFunction<Forward, Backward>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t tp) {
    ctx->saved_data["tp"] = tp;
    ctx->saved_data["shape"] = x.sizes().vec();
    return Forward(x, *reinterpret_cast<const comm::Group*>(tp));
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {Backward(g[0], group_of(ctx)).view(ctx->saved_data["shape"].toIntVector()), at::Tensor()};
  }
};
using GatherRows = RowsFunction<all_gathered_rows, reduce_scattered_rows>;
using ReduceScatterRows = RowsFunction<reduce_scattered_rows, all_gathered_rows>;
using SplitRows = RowsFunction<own_rows, all_gathered_rows>;
using GatherRowsWhole = RowsFunction<all_gathered_rows, own_rows>;

int64_t ptr(const comm::Group& g) { return reinterpret_cast<int64_t>(&g); }

}  // namespace

at::Tensor copy_to_tp(const at::Tensor& x, const comm::Group& tp) {
  return tp.size == 1 ? x : CopyToTp::apply(x, ptr(tp));
}

at::Tensor reduce_from_tp(const at::Tensor& x, const comm::Group& tp) {
  return tp.size == 1 ? x : ReduceFromTp::apply(x, ptr(tp));
}

at::Tensor gather_rows(const at::Tensor& local, const comm::Group& tp) {
  return tp.size == 1 ? rows(local) : GatherRows::apply(local, ptr(tp));
}

at::Tensor reduce_scatter_rows(const at::Tensor& partial, const comm::Group& tp) {
  return tp.size == 1 ? rows(partial) : ReduceScatterRows::apply(partial, ptr(tp));
}

at::Tensor split_rows(const at::Tensor& whole, const comm::Group& tp) {
  return tp.size == 1 ? rows(whole) : SplitRows::apply(whole, ptr(tp));
}

at::Tensor gather_rows_whole(const at::Tensor& local, const comm::Group& tp) {
  return tp.size == 1 ? rows(local) : GatherRowsWhole::apply(local, ptr(tp));
}

}  // namespace slm::parallel::tensor
