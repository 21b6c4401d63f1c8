// parallel/pipeline/executor.cpp: see executor.h.
#include "parallel/pipeline/executor.h"

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <map>

#include "comm/collectives.h"
#include "parallel/data_parallel.h"
#include "util/trace.h"

namespace slm::parallel::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTiedGradTag = 1 << 30, kTiedWeightTag = (1 << 30) + 1, kNormTag = (1 << 30) + 2;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int num_stages(const Pipeline& p) { return static_cast<int>(p.plan.stages.size()); }
int stage_tp(const Pipeline& p, int stage) { return p.plan.stages[static_cast<size_t>(stage)].tp; }

// Tag of the message that carries micro-batch m across the boundary into `stage` (activations,
// dir 0) or out of it backwards (gradients, dir 1).
int tag_of(const Pipeline& p, int micro, int stage, int dir) { return (micro * num_stages(p) + stage) * 2 + dir; }

// The rank of `stage` (same replica) that this rank exchanges with: the one whose tp rank is
// ours modulo that stage's tp.
int source_in(const Pipeline& p, int stage) {
  return rank_at(p.plan, stage, p.role.replica, p.role.tp_rank % stage_tp(p, stage));
}
// Every rank of `stage` (same replica) that takes its message from us.
std::vector<int> targets_in(const Pipeline& p, int stage) {
  std::vector<int> out;
  const int mine = stage_tp(p, p.role.stages.front());
  for (int j = 0; j < stage_tp(p, stage); ++j)
    if (j % mine == p.role.tp_rank) out.push_back(rank_at(p.plan, stage, p.role.replica, j));
  return out;
}

// Does action a wait for a message? (forward of a non-first chunk, backward of a non-last one)
bool receives(const Pipeline& p, const Action& a) {
  const Chunk& c = p.chunks[static_cast<size_t>(a.chunk)];
  return a.op == Action::F ? !c.first : !c.last;
}

// Scatter-gather across a boundary (Megatron's optimisation): when both stages have the same tp
// degree, activations are whole on every tp rank, so tp rank j sends only the j-th 1/tp of them
// and the receiving stage all-gathers over its (fast, local) tp group: tp times fewer bytes on the
// stage-to-stage link.
bool scatter_gather(const Pipeline& p, int other_stage, int64_t numel) {
  const int tp = stage_tp(p, p.role.stages.front());
  return tp > 1 && stage_tp(p, other_stage) == tp && numel % tp == 0;
}

bool holds_first(const Pipeline& p) { return p.chunks.front().first; }
bool holds_last(const Pipeline& p) { return p.chunks.back().last; }

}  // namespace

std::vector<Action> forward_actions(int micro, int chunks) {
  std::vector<Action> out;
  for (int m = 0; m < micro; ++m)
    for (int c = 0; c < chunks; ++c) out.push_back({Action::F, m, c});
  return out;
}

ScheduleResult run_actions(Pipeline& p, DataParallel& d, const std::vector<Action>& actions,
                           const std::vector<MicroBatch>& batches, double weight, double scale, bool train) {
  const auto started = Clock::now();
  const int64_t C = p.model->cfg.n_embd;
  ScheduleResult r;
  at::Tensor loss_sum;  // the micro-batch losses, summed on the device
  struct Live {
    at::Tensor in, out;  // the chunk's input (activations with grad) and output (activations or loss)
  };
  std::map<std::pair<int, int>, Live> live;  // (micro, chunk) between its forward and backward
  std::map<size_t, std::pair<at::Tensor, comm::Pending>> posted;  // action index -> receive
  std::vector<comm::Pending> sends;
  size_t final_b = actions.size(), final_first_b = actions.size();
  for (size_t i = 0; i < actions.size(); ++i)
    if (actions[i].op == Action::B) {
      final_b = i;
      if (p.chunks[static_cast<size_t>(actions[i].chunk)].first) final_first_b = i;
    }
  auto post = [&](size_t i) {
    if (i >= actions.size() || posted.count(i) || !receives(p, actions[i])) return;
    const Action& a = actions[i];
    const Chunk& c = p.chunks[static_cast<size_t>(a.chunk)];
    const int from = a.op == Action::F ? c.stage - 1 : c.stage + 1;
    const at::Tensor& x = batches[static_cast<size_t>(a.micro)].x;
    at::Tensor buf = at::empty({x.size(0), x.size(1), C}, x.options().dtype(at::kFloat));
    const int tag = a.op == Action::F ? tag_of(p, a.micro, c.stage, 0) : tag_of(p, a.micro, from, 1);
    at::Tensor wire = buf;
    if (scatter_gather(p, from, buf.numel())) wire = buf.view({p.tp.size, -1})[p.tp.rank];
    posted.emplace(i, std::make_pair(buf, comm::recv_async(wire, source_in(p, from), tag, p.p2p)));
  };
  // Receives posted ahead: Gloo moves a message once its receive is posted (the receiver's notice
  // crosses the link first), so the first `ahead` actions' receives are posted at the start and
  // each action posts the one `ahead` actions later; NCCL pairs messages by order: one ahead.
  const size_t ahead = comm::matched_by_tag(p.p2p) ? static_cast<size_t>(kReceivesAhead) : 1;
  auto post_first = [&] {
    for (size_t i = 0; i < ahead; ++i) post(i);
  };
  auto take = [&](size_t i) {
    post(i);
    auto it = posted.find(i);
    {
      trace::Span span(actions[i].op == Action::F ? "wait activations" : "wait gradient", trace::kWait, actions[i].micro,
                       actions[i].chunk);
      it->second.second.wait();
    }
    at::Tensor buf = it->second.first;
    posted.erase(it);
    const Action& a = actions[i];
    const int from = p.chunks[static_cast<size_t>(a.chunk)].stage + (a.op == Action::F ? -1 : 1);
    if (scatter_gather(p, from, buf.numel())) {
      at::Tensor flat = buf.view({-1}), mine = flat.view({p.tp.size, -1})[p.tp.rank].clone();
      trace::Span span("tp gather", trace::kWait);
      comm::all_gather_into(flat, mine, p.tp);
    }
    return buf;
  };
  auto send = [&](const at::Tensor& t, int to_stage, int tag) {
    at::Tensor wire = t.detach().to(at::kFloat).contiguous();
    if (scatter_gather(p, to_stage, wire.numel())) wire = wire.view({p.tp.size, -1})[p.tp.rank].contiguous();
    for (int dst : targets_in(p, to_stage)) sends.push_back(comm::send_async(wire, dst, tag, p.p2p));
  };
  // The tied embedding, where the first and last stage are on different ranks: the first stage's
  // wte (as the last update left it) goes to the last stage's head in every action list. Gloo
  // (pairs by tag): the first stage sends it right after its first activation, and the last stage
  // waits for it only where its head is first used, at the end of its first forward. Sent at the
  // list's start, the weights went first on the pair's one connection, and at 50 ms one way the
  // first activation arrived 80-120 ms after it was computed instead of ~55 (the weights move only
  // once the last stage's receive has been posted and its notice has crossed the link; traced,
  // docs/planner.md). The head's gradient comes back into a receive posted here, long before the
  // first stage's final backward needs it.
  // (NCCL pairs messages by order: there the weights go first and are taken before the first
  // forward, and the head's gradient receive is posted when it is needed, after the last
  // activation gradient, which the last stage sends before the head's.)
  const bool by_tag = comm::matched_by_tag(p.p2p);
  const bool tied_out = holds_first(p) && !holds_last(p), tied_in = holds_last(p) && !holds_first(p);
  at::Tensor head_grad;
  comm::Pending head_grad_in;
  auto post_head_grad = [&] {
    head_grad = at::empty_like(p.model->wte);
    head_grad_in = comm::recv_async(head_grad, source_in(p, num_stages(p) - 1), kTiedGradTag, p.p2p);
  };
  bool tied_sent = false;
  auto send_tied = [&] {
    if (!tied_out || tied_sent) return;
    tied_sent = true;
    sends.push_back(comm::send_async(p.model->wte.detach().contiguous(),
                                     rank_at(p.plan, num_stages(p) - 1, p.role.replica, p.role.tp_rank), kTiedWeightTag, p.p2p));
  };
  at::Tensor tied_w;
  comm::Pending tied_w_in;
  double tied_wait_s = 0;  // inside a forward: not counted as compute (the trace's F span holds it)
  auto take_tied = [&] {
    if (!tied_w.defined()) return;
    {
      const auto t = Clock::now();
      trace::Span span("wait tied weights", trace::kWait);
      tied_w_in.wait();
      tied_wait_s += since(t);
    }
    torch::NoGradGuard no_grad;
    p.model->head.detach().copy_(tied_w);
    tied_w = at::Tensor();
  };
  if (tied_out) {
    if (!by_tag) send_tied();
    if (train && by_tag) post_head_grad();
  }
  if (tied_in) {
    // Gloo: the activations' receives first, so that their notices cross before the weights' and
    // the first stage, where both sends wait for their notices, lets the activation go first.
    if (by_tag) post_first();
    tied_w = at::empty_like(p.model->head);
    tied_w_in = comm::recv_async(tied_w, rank_at(p.plan, 0, p.role.replica, p.role.tp_rank), kTiedWeightTag, p.p2p);
    post_first();  // NCCL: in order after the weights' (a no-op where posted above)
    if (!by_tag) take_tied();
  }
  const std::function<void()> before_head = take_tied;
  post_first();  // a no-op where done above (the last stage posts before it waits for the weights)
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    const Chunk& c = p.chunks[static_cast<size_t>(a.chunk)];
    const MicroBatch& mb = batches[static_cast<size_t>(a.micro)];
    if (a.op == Action::F) {
      at::Tensor in = c.first ? mb.x : take(i);
      post(i + ahead);  // later messages travel while this chunk computes
      if (!c.first && train) in.requires_grad_(true);
      const auto t = Clock::now();
      const double waited = tied_wait_s;
      at::Tensor out;
      {
        trace::Span span("F", trace::kCompute, a.micro, a.chunk);
        at::AutoGradMode grad_mode(train);
        out = chunk_forward(d, *p.model, c, in, mb.y, p.tp, train, before_head);
      }
      if (c.last) loss_sum = loss_sum.defined() ? loss_sum + out.detach().to(at::kDouble) : out.detach().to(at::kDouble);
      r.compute_s += since(t) - (tied_wait_s - waited);
      if (!c.last) send(out, c.stage + 1, tag_of(p, a.micro, c.stage + 1, 0));
      send_tied();  // after the first activation (a no-op after that, or off the first stage)
      if (train) live[{a.micro, a.chunk}] = {in, out};
      continue;
    }
    auto it = live.find({a.micro, a.chunk});
    Live l = it->second;
    live.erase(it);
    at::Tensor grad = c.last ? at::Tensor() : take(i);
    post(i + ahead);
    if (i == final_first_b && train && holds_first(p) && !holds_last(p)) {  // the head's share of the tied embedding gradient
      if (!head_grad.defined()) post_head_grad();
      trace::Span span("wait tied gradient", trace::kWait);
      head_grad_in.wait();
      at::Tensor& g = p.model->wte.mutable_grad();
      g.defined() ? g.add_(head_grad) : (g = head_grad);
    }
    begin_backward(d, /*last=*/i == final_b);
    const auto t = Clock::now();
    {
      trace::Span span("B", trace::kCompute, a.micro, a.chunk);
      if (c.last) (l.out * (weight * scale)).backward();
      else l.out.backward(grad);
    }
    r.compute_s += since(t);
    if (!c.first) send(l.in.grad(), c.stage - 1, tag_of(p, a.micro, c.stage, 1));
  }
  if (train && holds_last(p) && !holds_first(p)) {
    at::Tensor& g = p.model->head.mutable_grad();
    at::Tensor wire = g.defined() ? g.contiguous() : at::zeros_like(p.model->head);
    sends.push_back(comm::send_async(wire, rank_at(p.plan, 0, p.role.replica, p.role.tp_rank), kTiedGradTag, p.p2p));
    g = at::Tensor();
  }
  send_tied();  // where the list had no forward: every list carries the weights once
  take_tied();
  {
    trace::Span span("wait sends", trace::kWait);
    for (comm::Pending& s : sends) s.wait();
  }
  if (loss_sum.defined()) r.loss = loss_sum.item<double>();  // one device sync per step, not per micro-batch
  r.wall_s = since(started);
  return r;
}

void sync_tied_weights(Pipeline& p) {
  if (holds_first(p) == holds_last(p)) return;  // no pipeline, or a middle stage
  torch::NoGradGuard no_grad;
  const int S = num_stages(p);
  if (holds_first(p)) {
    at::Tensor w = p.model->wte.detach().contiguous();
    comm::send_async(w, rank_at(p.plan, S - 1, p.role.replica, p.role.tp_rank), kTiedWeightTag, p.p2p).wait();
  } else {
    at::Tensor w = at::empty_like(p.model->head);
    comm::recv_async(w, rank_at(p.plan, 0, p.role.replica, p.role.tp_rank), kTiedWeightTag, p.p2p).wait();
    p.model->head.detach().copy_(w);
  }
}

// The global norm: every pipeline rank of a replica sends its stage's number to the others and
// takes theirs, point to point. A collective over every rank would go round a ring that crosses
// each slow link twice and let its members go at different times. Gloo sends only into a posted
// receive, so there the receives are posted before the step's schedule: the later stages finish
// their backward first and their numbers are waiting when the first stage needs them; the first
// stage's number reaches the others before its next activations would. NCCL pairs messages by
// order: there the exchange runs after the schedule, the lower rank of each pair sending first.
namespace {
at::TensorOptions norm_options(DataParallel& d) {
  return at::TensorOptions().dtype(at::kDouble).device(grad_shard(d).device());
}

// Posts the receive of every other pipeline rank's number into n.theirs.
void receive_norms(Pipeline& p, PendingNorm& n) {
  for (int k = 0; k < p.plan.pp; ++k)
    if (k != p.role.pipe)
      n.recvs.push_back(comm::recv_async(n.theirs[static_cast<size_t>(k)], source_in(p, k), kNormTag, p.p2p));
}
}  // namespace

PendingNorm post_norm_receives(Pipeline& p, DataParallel& d) {
  PendingNorm n;
  const int P = p.plan.pp;
  if (P == 1) return n;
  n.theirs.resize(static_cast<size_t>(P));
  for (int k = 0; k < P; ++k)
    if (k != p.role.pipe) n.theirs[static_cast<size_t>(k)] = at::empty({1}, norm_options(d));
  n.early = comm::matched_by_tag(p.p2p);
  if (n.early) receive_norms(p, n);
  return n;
}

double pipeline_grad_norm_sq(Pipeline& p, DataParallel& d, PendingNorm& n) {
  const double stage = grad_norm_sq(d);  // the same on every rank of this stage (and replica)
  const int P = p.plan.pp;
  if (P == 1) return stage;
  const at::Tensor mine = at::full({1}, stage, norm_options(d));
  const int me = p.p2p.rank;
  std::vector<comm::Pending> ops;
  auto sends = [&](bool lower) {  // to the peers below (lower) or above this rank
    for (int k = 0; k < P; ++k)
      if (k != p.role.pipe)
        for (int dst : targets_in(p, k))
          if ((dst < me) == lower) ops.push_back(comm::send_async(mine, dst, kNormTag, p.p2p));
  };
  sends(false);
  if (!n.early) receive_norms(p, n);
  sends(true);
  for (comm::Pending& w : n.recvs) w.wait();
  for (comm::Pending& w : ops) w.wait();
  double total = 0;  // in pipeline order on every rank: the same sum everywhere
  for (int k = 0; k < P; ++k) total += k == p.role.pipe ? stage : n.theirs[static_cast<size_t>(k)].cpu().item<double>();
  n = PendingNorm{};
  return total;
}

}  // namespace slm::parallel::pipeline
