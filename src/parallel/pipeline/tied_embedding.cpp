// parallel/pipeline/tied_embedding.cpp: see tied_embedding.h.
#include "parallel/pipeline/tied_embedding.h"

#include <torch/torch.h>

#include <chrono>

#include "util/trace.h"

namespace slm::parallel::pipeline {
namespace {
int last_stage(const Pipeline& p) { return static_cast<int>(p.plan.stages.size()) - 1; }
int first_of_mine(const Pipeline& p) { return rank_at(p.plan, 0, p.role.replica, p.role.tp_rank); }
int last_of_mine(const Pipeline& p) { return rank_at(p.plan, last_stage(p), p.role.replica, p.role.tp_rank); }
}  // namespace

TiedExchange::TiedExchange(Pipeline& p_, DataParallel& d_, bool train_, std::vector<comm::Pending>& sends_)
    : p(p_), d(d_), train(train_), by_tag(comm::matched_by_tag(p_.p2p)),
      out(p_.chunks.front().first && !p_.chunks.back().last), in(p_.chunks.back().last && !p_.chunks.front().first),
      sends(sends_) {}

void TiedExchange::post_head_grad() {
  head_grad = at::empty_like(tied_embedding(d));
  head_grad_in = comm::recv_async(head_grad, rank_at(p.plan, last_stage(p), p.role.replica,
                                                     p.role.tp_rank % p.plan.stages.back().tp),
                                  kTiedGradTag, p.p2p);
}

void TiedExchange::start(const std::function<void()>& post_first) {
  if (out) {
    if (!by_tag) after_forward();
    if (train && by_tag) post_head_grad();
  }
  if (in) {
    if (by_tag) post_first();  // Gloo: the activations' notices cross before the weights'
    weights = at::empty_like(p.model->head);
    weights_in = comm::recv_async(weights, first_of_mine(p), kTiedWeightTag, p.p2p);
    post_first();  // NCCL: in order after the weights' (a no-op where posted above)
    if (!by_tag) before_head();
  }
  post_first();  // a no-op where done above
}

void TiedExchange::after_forward() {
  if (!out || sent) return;
  sent = true;
  sends.push_back(comm::send_async(tied_embedding(d).contiguous(), last_of_mine(p), kTiedWeightTag, p.p2p));
}

void TiedExchange::before_head() {
  if (!weights.defined()) return;
  {
    const auto t = std::chrono::steady_clock::now();
    trace::Span span("wait tied weights", trace::kWait);
    weights_in.wait();
    wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  torch::NoGradGuard no_grad;
  p.model->head.detach().copy_(weights);
  weights = at::Tensor();
}

void TiedExchange::add_head_grad() {
  if (!train || !out) return;
  if (!head_grad.defined()) post_head_grad();
  trace::Span span("wait tied gradient", trace::kWait);
  head_grad_in.wait();
  add_tied_embedding_grad(d, head_grad);
}

void TiedExchange::finish() {
  if (train && in) {
    at::Tensor& g = p.model->head.mutable_grad();
    at::Tensor wire = g.defined() ? g.contiguous() : at::zeros_like(p.model->head);
    sends.push_back(comm::send_async(wire, first_of_mine(p), kTiedGradTag, p.p2p));
    g = at::Tensor();
  }
  after_forward();  // where the list had no forward: every list carries the weights once
  before_head();
}

}  // namespace slm::parallel::pipeline
