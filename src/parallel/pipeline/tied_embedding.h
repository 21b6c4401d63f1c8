// parallel/pipeline/tied_embedding.h: the tied embedding across a pipeline, as one action list
// exchanges it when the first stage (wte) and the last stage (its head) are on different ranks:
// the first stage's wte, as the last update left it, goes to the last stage's head, and the
// head's gradient comes back to be added to wte's before the first stage's final backward.
// Owns: TiedExchange, kTiedGradTag, kTiedWeightTag.
//
// Order. Gloo pairs messages by tag, and a message moves only once its receive is posted and the
// receiver's notice has crossed the link: the last stage posts its activations' receives before
// the weights', the first stage sends the weights right after its first activation, and the last
// stage waits for them only where its head is first used (the end of its first forward). Sent at
// the list's start, the weights went first on the pair's one connection, and at 50 ms one way the
// first activation arrived 80-120 ms after it was computed instead of ~55. The head's gradient
// comes back into a receive posted at the start, long before the first stage needs it. NCCL pairs
// messages by order: there the weights go first and are taken before the first forward, and the
// head's gradient receive is posted when it is needed, after the last activation gradient.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "comm/collectives.h"
#include "parallel/data_parallel.h"
#include "parallel/pipeline/executor.h"

namespace slm::parallel::pipeline {

constexpr int kTiedGradTag = 1 << 30, kTiedWeightTag = (1 << 30) + 1;

struct TiedExchange {
  // `sends` collects this exchange's sends (waited for with the list's others). wte and its
  // gradient are d's (tied_embedding: under ZeRO 3 the step's gathered copy).
  TiedExchange(Pipeline& p, DataParallel& d, bool train, std::vector<comm::Pending>& sends);
  // At the list's start. `post_first` posts the first actions' activation receives (the last
  // stage orders them around the weights' receive, above).
  void start(const std::function<void()>& post_first);
  void after_forward();  // first stage: the weights go after the first activation (once)
  void before_head();    // last stage: the weights in place before the head is first used
  void add_head_grad();  // first stage, at its final backward: wait for the head's gradient, add it
  void finish();         // the list's end: the head's gradient goes back; the weights go and
                         // arrive where the list had no forward
  double wait_s = 0;     // spent in before_head (inside a forward: not compute)

 private:
  Pipeline& p;
  DataParallel& d;
  bool train, by_tag, out, in, sent = false;
  std::vector<comm::Pending>& sends;
  at::Tensor head_grad, weights;
  comm::Pending head_grad_in, weights_in;
  void post_head_grad();
};

}  // namespace slm::parallel::pipeline
