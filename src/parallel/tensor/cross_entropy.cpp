// parallel/tensor/cross_entropy.cpp: see cross_entropy.h.
#include "parallel/tensor/cross_entropy.h"

#include <torch/torch.h>

#include "comm/collectives.h"
#include "parallel/tensor/mappings.h"

namespace slm::parallel::tensor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct VocabParallelCE : torch::autograd::Function<VocabParallelCE> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& targets,
                            int64_t start, int64_t vocab_size, int64_t tp_ptr) {
    const comm::Group& tp = *reinterpret_cast<const comm::Group*>(tp_ptr);
    const int64_t n = logits.size(1);
    at::Tensor x = logits.detach().to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);  // worked on in place
    const int64_t real = std::clamp<int64_t>(vocab_size - start, 0, n);  // real columns here
    if (real < n) x.narrow(1, real, n - real).fill_(-std::numeric_limits<float>::infinity());
    at::Tensor mx = std::get<0>(x.max(1));  // (N)
    comm::all_reduce_max(mx, tp);
    x.sub_(mx.unsqueeze(1)).exp_();  // exp(logit - max); padding -> 0
    at::Tensor sum = x.sum(1);
    comm::all_reduce_sum(sum, tp);
    at::Tensor mine = (targets >= start) & (targets < start + n);
    at::Tensor local = (targets - start).clamp(0, n - 1);
    at::Tensor picked = (logits.detach().gather(1, local.unsqueeze(1)).squeeze(1).to(at::kFloat) - mx) *
                        mine.to(at::kFloat);
    comm::all_reduce_sum(picked, tp);
    x.div_(sum.unsqueeze(1));  // softmax over the whole vocabulary, this rank's columns
    ctx->save_for_backward({x, mine, local});
    ctx->saved_data["dtype"] = static_cast<int64_t>(logits.scalar_type());
    return (sum.log() - picked).mean();
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    // The saved softmax becomes the gradient in place: it is this node's alone and released after
    // it, so the (N, V / tp) fp32 block is not held twice at the backward's start.
    variable_list s = ctx->get_saved_variables();
    at::Tensor grad = s[0];  // softmax - one_hot(target), where the target is ours
    grad.scatter_add_(1, s[2].unsqueeze(1), -s[1].to(at::kFloat).unsqueeze(1));
    grad.mul_(g[0] / static_cast<double>(grad.size(0)));
    grad = grad.to(static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt()));
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

std::pair<int64_t, int64_t> vocab_range(int64_t padded_vocab, int rank, int tp) {
  const int64_t n = padded_vocab / tp;
  return {rank * n, n};
}

at::Tensor vocab_parallel_lookup(const at::Tensor& idx, const at::Tensor& wte_local, int64_t start) {
  const int64_t n = wte_local.size(0);
  at::Tensor mine = (idx >= start) & (idx < start + n);
  return at::embedding(wte_local, (idx - start).clamp(0, n - 1)) * mine.unsqueeze(-1).to(wte_local.dtype());
}

at::Tensor vocab_parallel_embedding(const at::Tensor& idx, const at::Tensor& wte_local, int64_t start,
                                    const comm::Group& tp) {
  return reduce_from_tp(vocab_parallel_lookup(idx, wte_local, start), tp);
}

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits_local, const at::Tensor& targets, int64_t start,
                                        int64_t vocab_size, const comm::Group& tp) {
  return VocabParallelCE::apply(logits_local, targets, start, vocab_size, reinterpret_cast<int64_t>(&tp));
}

}  // namespace slm::parallel::tensor
