// parallel/pipeline/executor.cpp: see executor.h.
#include "parallel/pipeline/executor.h"

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <map>

#include "comm/collectives.h"
#include "parallel/data_parallel.h"
#include "parallel/pipeline/tied_embedding.h"
#include "util/trace.h"

namespace slm::parallel::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kNormTag = (1 << 30) + 2;  // after the tied embedding's (tied_embedding.h)

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

namespace {

// The activations and their gradients between stages, for one action list: receives posted ahead
// (Gloo moves a message once its receive is posted and the receiver's notice has crossed the link,
// so the first `ahead` actions' receives are posted at the start and each action posts the one
// `ahead` later; NCCL pairs messages by order: one ahead), taken when an action needs them, and
// sends collected to be waited for at the list's end.
struct Messages {
  Pipeline& p;
  const std::vector<Action>& actions;
  const std::vector<MicroBatch>& batches;
  size_t ahead;
  std::map<size_t, std::pair<at::Tensor, comm::Pending>> posted;  // action index -> receive
  std::vector<comm::Pending> sends;

  Messages(Pipeline& p_, const std::vector<Action>& a, const std::vector<MicroBatch>& b)
      : p(p_), actions(a), batches(b),
        ahead(comm::matched_by_tag(p_.p2p) ? static_cast<size_t>(kReceivesAhead) : 1) {}

  // Posts the receive of action i's input (if it takes one and it is not posted yet).
  void post(size_t i) {
    if (i >= actions.size() || posted.count(i) || !receives(p, actions[i])) return;
    const Action& a = actions[i];
    const Chunk& c = p.chunks[static_cast<size_t>(a.chunk)];
    const int from = a.op == Action::F ? c.stage - 1 : c.stage + 1;
    const at::Tensor& x = batches[static_cast<size_t>(a.micro)].x;
    at::Tensor buf = at::empty({x.size(0), x.size(1), p.model->cfg.n_embd}, x.options().dtype(at::kFloat));
    const int tag = a.op == Action::F ? tag_of(p, a.micro, c.stage, 0) : tag_of(p, a.micro, from, 1);
    at::Tensor wire = buf;
    if (scatter_gather(p, from, buf.numel())) wire = buf.view({p.tp.size, -1})[p.tp.rank];
    posted.emplace(i, std::make_pair(buf, comm::recv_async(wire, source_in(p, from), tag, p.p2p)));
  }
  void post_first() {
    for (size_t i = 0; i < ahead; ++i) post(i);
  }
  // Action i's input, once it has arrived (all-gathered over the tp group where scattered).
  at::Tensor take(size_t i) {
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
  }
  void send(const at::Tensor& t, int to_stage, int tag) {
    at::Tensor wire = t.detach().to(at::kFloat).contiguous();
    if (scatter_gather(p, to_stage, wire.numel())) wire = wire.view({p.tp.size, -1})[p.tp.rank].contiguous();
    for (int dst : targets_in(p, to_stage)) sends.push_back(comm::send_async(wire, dst, tag, p.p2p));
  }
  void wait_sends() {
    trace::Span span("wait sends", trace::kWait);
    for (comm::Pending& s : sends) s.wait();
  }
};

// The index of the list's last backward, and of its last backward of the first chunk.
std::pair<size_t, size_t> final_backwards(const Pipeline& p, const std::vector<Action>& actions) {
  size_t final_b = actions.size(), final_first_b = actions.size();
  for (size_t i = 0; i < actions.size(); ++i)
    if (actions[i].op == Action::B) {
      final_b = i;
      if (p.chunks[static_cast<size_t>(actions[i].chunk)].first) final_first_b = i;
    }
  return {final_b, final_first_b};
}

}  // namespace

ScheduleResult run_actions(Pipeline& p, DataParallel& d, const std::vector<Action>& actions,
                           const std::vector<MicroBatch>& batches, const LossFactor& factor, bool train) {
  const auto started = Clock::now();
  ScheduleResult r;
  at::Tensor loss_sum;  // the micro-batch losses, summed on the device
  struct Live {
    at::Tensor in, out;  // the chunk's input (activations with grad) and output (activations or loss)
  };
  std::map<std::pair<int, int>, Live> live;  // (micro, chunk) between its forward and backward
  const auto [final_b, final_first_b] = final_backwards(p, actions);
  Messages msg(p, actions, batches);
  TiedExchange tied(p, d, train, msg.sends);
  tied.start([&] { msg.post_first(); });
  const std::function<void()> before_head = [&] { tied.before_head(); };
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    const Chunk& c = p.chunks[static_cast<size_t>(a.chunk)];
    const MicroBatch& mb = batches[static_cast<size_t>(a.micro)];
    if (a.op == Action::F) {
      at::Tensor in = c.first ? mb.x : msg.take(i);
      msg.post(i + msg.ahead);  // later messages travel while this chunk computes
      if (!c.first && train) in.requires_grad_(true);
      const auto t = Clock::now();
      const double waited = tied.wait_s;
      at::Tensor out;
      {
        trace::Span span("F", trace::kCompute, a.micro, a.chunk);
        at::AutoGradMode grad_mode(train);
        out = chunk_forward(d, *p.model, c, in, mb.y, p.tp, train, before_head);
      }
      if (c.last) loss_sum = loss_sum.defined() ? loss_sum + out.detach().to(at::kDouble) : out.detach().to(at::kDouble);
      r.compute_s += since(t) - (tied.wait_s - waited);
      if (!c.last) msg.send(out, c.stage + 1, tag_of(p, a.micro, c.stage + 1, 0));
      tied.after_forward();
      if (train) live[{a.micro, a.chunk}] = {in, out};
      continue;
    }
    auto it = live.find({a.micro, a.chunk});
    Live l = it->second;
    live.erase(it);
    at::Tensor grad = c.last ? at::Tensor() : msg.take(i);
    msg.post(i + msg.ahead);
    if (i == final_first_b) tied.add_head_grad();  // the head's share of the tied embedding gradient
    begin_backward(d, /*last=*/i == final_b);
    const auto t = Clock::now();
    {
      trace::Span span("B", trace::kCompute, a.micro, a.chunk);
      if (c.last) (factor.on_device.defined() ? l.out * factor.on_device : l.out * factor.value).backward();
      else l.out.backward(grad);
    }
    r.compute_s += since(t);
    if (!c.first) msg.send(l.in.grad(), c.stage - 1, tag_of(p, a.micro, c.stage, 1));
  }
  tied.finish();
  msg.wait_sends();
  r.loss = loss_sum;
  r.wall_s = since(started);
  return r;
}

void sync_tied_weights(Pipeline& p, DataParallel& d) {
  if (holds_first(p) == holds_last(p)) return;  // no pipeline, or a middle stage
  torch::NoGradGuard no_grad;
  const int S = num_stages(p);
  if (holds_first(p)) {
    at::Tensor w = tied_embedding(d).contiguous();
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

namespace {
// Sends `mine` (this stage's number, 1 double) to the other pipeline ranks and takes theirs: their
// sum, added in pipeline order (the same bits on every rank), on mine's device.
at::Tensor exchange_norms(Pipeline& p, const at::Tensor& mine, PendingNorm& n) {
  const int P = p.plan.pp;
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
  at::Tensor total = at::zeros({1}, mine.options());
  for (int k = 0; k < P; ++k) total = total + (k == p.role.pipe ? mine : n.theirs[static_cast<size_t>(k)]);
  n = PendingNorm{};
  return total;
}
}  // namespace

double pipeline_grad_norm_sq(Pipeline& p, DataParallel& d, PendingNorm& n) {
  const double stage = grad_norm_sq(d);  // the same on every rank of this stage (and replica)
  if (p.plan.pp == 1) return stage;
  return exchange_norms(p, at::full({1}, stage, norm_options(d)), n).item<double>();
}

at::Tensor pipeline_grad_norm_sq_on_device(Pipeline& p, DataParallel& d, PendingNorm& n) {
  const at::Tensor stage = grad_norm_sq_on_device(d);
  if (p.plan.pp == 1) return stage;
  return exchange_norms(p, stage.reshape({1}), n).reshape({});
}

}  // namespace slm::parallel::pipeline
