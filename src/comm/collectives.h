// comm/collectives.h: the collective verbs used by parallel/ and train/, on any Group.
// Every verb is a no-op (or the identity) on a group of size 1. A failed or timed-out collective
// throws PeerLost naming the lost rank(s) (comm/health.h). Gloo before LibTorch 2.15 has no bf16:
// bf16 then travels as fp32 (comm/compat.h). On Gloo reduce_scatter is an all-reduce of which each
// rank keeps its part (twice the bytes of a ring reduce-scatter: Gloo 1.13 has none, and 2.15's
// moves as many bytes as an all-reduce; docs/benchmarks.md); on NCCL it is NCCL's.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "comm/group.h"
#include "util/error.h"

namespace slm::comm {

// A peer died, hung past the timeout, or the store vanished. One line, names the rank(s).
struct PeerLost : JobError {
  using JobError::JobError;
};

// An operation in flight. wait() blocks, then runs the completion step (if any). Waiting twice
// is a no-op; destroying an unwaited Pending waits (errors are then swallowed).
struct Pending {
  struct State;
  std::shared_ptr<State> state;
  void wait();
};

// p, followed on completion by f (run at once if p is already complete or trivial).
Pending then(Pending p, std::function<void()> f);

// In place: t = sum over the group of t.
void all_reduce_sum(at::Tensor& t, const Group& g);
Pending all_reduce_sum_async(const at::Tensor& t, const Group& g);
// In place: t = elementwise max over the group of t.
void all_reduce_max(at::Tensor& t, const Group& g);
// shard_out (n elements, any shape, contiguous) = this rank's n-element part of the sum over the
// group of flat (size * n). `flat` is used as scratch and is clobbered. Async: `flat` and
// `shard_out` must stay alive.
void reduce_scatter_sum(at::Tensor& shard_out, at::Tensor& flat, const Group& g);
Pending reduce_scatter_sum_async(const at::Tensor& shard_out, const at::Tensor& flat, const Group& g);
// flat_out (size * n) = every rank's shard (n), in rank order.
void all_gather_into(at::Tensor& flat_out, const at::Tensor& shard, const Group& g);
Pending all_gather_into_async(const at::Tensor& flat_out, const at::Tensor& shard, const Group& g);
void broadcast(at::Tensor& t, int root, const Group& g);
void barrier(const Group& g);

// UserError on every rank unless `text` is identical on all ranks of g (compares a hash), naming
// the ranks that differ from rank 0, e.g. "rank 1's configuration differs from rank 0's". Call it
// before collectives whose sizes depend on `text`: mismatched collectives crash Gloo.
void require_same(const std::string& text, const Group& g, const std::string& what);

// Point to point inside g (dst/src are ranks of g; g.size > 1). The tag pairs a send with its
// receive; t stays alive and untouched until the wait. The receive fills t (contiguous).
Pending send_async(const at::Tensor& t, int dst, int tag, const Group& g);
Pending recv_async(const at::Tensor& t, int src, int tag, const Group& g);
// Whether g pairs a message with its receive by tag (Gloo: receives may be posted early and in any
// order; a message moves only once its receive is posted) or by order (NCCL: each pair of ranks
// must post its sends and receives in the same order on both sides, tags unused). SLM_P2P_IN_ORDER
// set: false on Gloo too, so that CPU tests run the order NCCL needs.
bool matched_by_tag(const Group& g);
// Payload bytes this rank has sent in g so far (ring all-reduce 2(n-1)/n of the tensor,
// all-gather (n-1)/n of the result, broadcast and send the tensor); 0 for a group of size 1.
int64_t bytes_sent(const Group& g);
// Adds n bytes (negative: takes them back) to what g has sent: for collectives that a CUDA graph
// replays, which the host does not see (train/step_graph.h).
void count_sent(const Group& g, int64_t n);
// Work on `groups` that has not finished within timeout_s (`what`: e.g. "a replayed step"): aborts
// their communicators, so that device work waiting on a lost peer ends, and throws PeerLost naming
// the groups and the lost rank(s).
[[noreturn]] void abandon(const std::vector<Group>& groups, const std::string& what, double timeout_s);

// Scalars, for metrics and decisions every rank must agree on.
std::vector<double> sum(std::vector<double> v, const Group& g);
double sum(double v, const Group& g);
double max(double v, const Group& g);
// Every rank's `mine` (each the same length), in rank order: g.size x mine.size() values.
std::vector<double> gather(const std::vector<double>& mine, const Group& g);
// sum(v, g) in the background: get() waits and returns the sums.
struct PendingSum {
  at::Tensor t;
  Pending op;
  std::vector<double> get();
};
PendingSum sum_async(const std::vector<double>& v, const Group& g);

}  // namespace slm::comm
