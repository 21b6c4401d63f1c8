// parallel/data_parallel.cpp: see data_parallel.h.
#include <torch/torch.h>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "comm/hierarchy.h"
#include "parallel/data_parallel_impl.h"
#include "parallel/tensor/model.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/trace.h"

namespace slm::parallel {

namespace {

struct ReadyHook : torch::autograd::FunctionPostHook {
  DataParallel* d;
  size_t index;
  ReadyHook(DataParallel* d_, size_t i) : d(d_), index(i) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override;
};

std::vector<Bucket> make_buckets(const FlatLayout& l, double bucket_mb) {
  const int64_t cap = std::max<int64_t>(1, mib_bytes(bucket_mb) / 4);  // fp32 gradients
  std::vector<Bucket> out;
  for (size_t k = l.names.size(); k-- > 0;) {  // backward order: last parameters first
    if (out.empty() || out.back().end - out.back().begin >= cap)
      out.push_back({l.offsets[k], l.offsets[k] + l.numels[k], {}, 0, false});
    out.back().params.push_back(k);
    out.back().begin = l.offsets[k];
  }
  return out;
}

// Zero 2: move a finished bucket's gradients into a staging buffer, free them, and start its
// reduction; on completion, add this rank's part to grad_own.
void launch_sharded(DataParallel& d, Bucket& b) {
  const int64_t n = b.end - b.begin;
  if (d.inflight.size() >= d.staging.size()) {
    d.inflight.front().wait();
    d.inflight.pop_front();
  }
  at::Tensor stage = d.staging[d.next_staging++ % d.staging.size()].narrow(0, 0, n);
  for (size_t i : b.params) {
    at::Tensor& g = d.params[i].mutable_grad();
    at::Tensor slot = stage.narrow(0, d.layout.offsets[i] - b.begin, d.layout.numels[i]);
    g.defined() ? slot.copy_(g.reshape({-1})) : slot.zero_();  // a parameter without gradient
    g = at::Tensor();
  }
  const int64_t lo = std::max(b.begin, d.shard.offset), hi = std::min(b.end, d.shard.offset + d.shard.size);
  comm::Pending p = comm::all_reduce_sum_async(stage, d.dp);
  if (lo < hi) {
    at::Tensor own = d.grad_own.narrow(0, lo - d.shard.offset, hi - lo);
    at::Tensor part = stage.narrow(0, lo - b.begin, hi - lo);
    p = comm::then(std::move(p), [own, part]() mutable { own.add_(part); });
  }
  d.inflight.push_back(p);
}

void launch(DataParallel& d, Bucket& b) {
  b.launched = true;
  if (d.cfg.zero >= 2) return launch_sharded(d, b);
  if (!d.last) return;
  d.inflight.push_back(comm::all_reduce_sum_async(d.grad_flat.narrow(0, b.begin, b.end - b.begin), d.dp));
}

torch::autograd::variable_list ReadyHook::operator()(const torch::autograd::variable_list& outputs,
                                                     const torch::autograd::variable_list&) {
  Bucket& b = d->buckets[d->bucket_of[index]];
  if (++b.ready == b.params.size()) launch(*d, b);
  return outputs;
}

// Sums of squares of g's chunks (a whole-buffer pow(2) would allocate a second copy of the
// gradients), in double, on g's device. Chunks of 1M floats summed in float; on a GPU 16M: CUDA's
// sum is a tree reduction (accurate far beyond 1M floats) and each chunk costs kernel launches
// (gpt2: 124 chunks took 2.6 ms of a 129 ms step on an H200 with one sync, 8 of them 0.5 ms).
at::Tensor chunk_square_sums(const at::Tensor& g) {
  const int64_t kChunk = g.is_cuda() ? 1 << 24 : 1 << 20;
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < g.numel(); i += kChunk) parts.push_back(g.narrow(0, i, std::min(kChunk, g.numel() - i)).pow(2).sum());
  if (parts.empty()) return at::zeros({1}, g.options().dtype(at::kDouble));
  return at::stack(parts).to(at::kDouble);
}

double sum_of_squares(const at::Tensor& g) {
  // The chunks' sums come back together: on a GPU one device sync instead of one per chunk (gpt2:
  // 124 of them, 3.7 ms of a 139 ms step on an H200, seen in a traced step), added up in order
  // (on a CPU the norm is what one item() per chunk gave, to the last bit).
  const at::Tensor sums = chunk_square_sums(g).cpu();
  const double* v = sums.data_ptr<double>();
  double total = 0;
  for (int64_t i = 0; i < sums.numel(); ++i) total += v[i];
  return total;
}

}  // namespace

void validate(const ParallelConfig& c) {
  if (c.zero < 0 || c.zero > 3)
    throw UserError(fmt::format("parallel: zero {} is not 0, 1, 2 or 3", c.zero));
  if (c.bucket_mb <= 0) throw UserError(fmt::format("parallel: bucket_mb {} must be positive", c.bucket_mb));
  // Degrees count ranks, which are ints: one past int's range was cast to 0 (a division by zero).
  constexpr int64_t most = std::numeric_limits<int>::max();
  if (c.dp == 0 || c.dp < -1 || c.dp > most)
    throw UserError(fmt::format("parallel: dp {} must be -1 or from 1 to {}", c.dp, most));
  for (const auto& [name, v] : {std::pair{"tp", c.tp}, {"pp", c.pp}, {"virtual_stages", c.virtual_stages}})
    if (v < 1 || v > most) throw UserError(fmt::format("parallel: {} {} must be from 1 to {}", name, v, most));
  if (c.micro_batches < 0) throw UserError("parallel: micro_batches must be >= 0 (0 = from batch_size)");
  if (c.zero_scope != "dp" && c.zero_scope != "site")
    throw UserError(fmt::format("parallel: zero_scope \"{}\" is not dp or site", c.zero_scope));
  if (c.memory_cap_gb < 0) throw UserError("parallel: memory_cap_gb must be >= 0 (0 = no cap)");
  if (!c.plan.empty() && (c.dp != -1 || c.tp != 1 || c.pp != 1 || c.virtual_stages != 1 || c.micro_batches != 0 ||
                          c.schedule != "auto"))
    throw UserError("parallel: give either a plan file (parallel.plan) or dp/tp/pp/virtual_stages/schedule/"
                    "micro_batches, not both");
}

std::shared_ptr<DataParallel> apply_data_parallel(model::GPT2& m, const ParallelConfig& cfg, const comm::Group& dp,
                                                  const comm::Group& tp) {
  auto d = std::make_shared<DataParallel>();
  d->cfg = cfg;
  d->dp = dp;
  d->tp = tp;
  d->zg = cfg.zero_scope == "site" ? comm::site_group(dp) : dp;
  d->model = &m;
  const auto named = model::named_parameters(m);
  d->layout = make_layout(named, dp.size);
  for (const auto& np : named) d->replicated.push_back(tp.size == 1 || tensor::replicated_over_tp(np.first));
  if (cfg.zero == 3) {
    setup_zero3(*d, m);
    return d;
  }
  for (const auto& np : named) d->params.push_back(np.second);
  d->param_flat = flatten_parameters(d->params, d->layout);
  d->shard = cfg.zero == 0 ? ShardInfo{0, d->layout.padded} : shard_of(d->layout, d->zg.rank, d->zg.size);
  d->buckets = make_buckets(d->layout, cfg.bucket_mb);
  d->bucket_of.resize(d->params.size());
  int64_t biggest = 0;
  for (size_t k = 0; k < d->buckets.size(); ++k) {
    for (size_t i : d->buckets[k].params) d->bucket_of[i] = k;
    biggest = std::max(biggest, d->buckets[k].end - d->buckets[k].begin);
  }
  if (cfg.zero >= 2) {
    d->grad_own = at::zeros({d->shard.size}, d->param_flat.options());
    for (int i = 0; i < 2; ++i) d->staging.push_back(at::empty({biggest}, d->param_flat.options()));
  } else {
    d->grad_flat = at::zeros({d->layout.padded}, d->param_flat.options());
    std::vector<at::Tensor> gv = views_of(d->grad_flat, d->layout);
    for (size_t i = 0; i < d->params.size(); ++i) d->params[i].mutable_grad() = gv[i];
  }
  for (size_t i = 0; i < d->params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(d->params[i]);
    acc->add_post_hook(std::make_unique<ReadyHook>(d.get(), i));
    d->accumulators.push_back(acc);
  }
  return d;
}

at::Tensor forward_loss(DataParallel& d, const at::Tensor& idx, const at::Tensor& targets, bool train) {
  model::GPT2 view;
  const model::GPT2& m = d.cfg.zero == 3 ? (view = zero3_model(d, {}, sequence_parallel(d) ? idx.size(1) : 0)) : *d.model;
  if (d.tp.size > 1) return tensor::forward_loss(m, idx, targets, d.tp, d.cfg.sequence_parallel, train);
  return model::forward_loss(m, idx, targets, train);
}

void zero_grads(DataParallel& d) {
  if (d.grad_flat.defined()) d.grad_flat.zero_();
  if (d.grad_own.defined()) d.grad_own.zero_();
  if (d.own.defined() && d.own.grad().defined()) d.own.mutable_grad().zero_();
  d.kept.clear();  // ZeRO 3: gathered before the last update
  d.in_step = d.cfg.zero == 3;
}

void begin_backward(DataParallel& d, bool last) {
  d.last = last;
  d.prefetched.clear();  // ZeRO 3: gathers started by forward are not the ones backward needs
  for (Bucket& b : d.buckets) b.ready = 0, b.launched = false;
}

// The pieces of grad_shard that hold parameter i's gradient: {offset in the shard, size}.
static std::vector<std::pair<int64_t, int64_t>> shard_pieces(const DataParallel& d, size_t i) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Segment& s : segments(d)) {
    const int64_t lo = std::max(s.global, d.layout.offsets[i]);
    const int64_t hi = std::min(s.global + s.size, d.layout.offsets[i] + d.layout.numels[i]);
    if (lo < hi) out.emplace_back(s.local + lo - s.global, hi - lo);
  }
  return out;
}

// Sequence parallelism: each tp rank's replicated parameters (LayerNorms, the row-parallel
// biases, wpe) saw only its tokens; their gradients are summed over tp, in one all-reduce. Every tp
// rank of a dp rank holds the same layout and shard, so the pieces line up.
static void sum_replicated_over_tp(DataParallel& d) {
  at::Tensor g = grad_shard(d);
  std::vector<at::Tensor> pieces;
  for (size_t i = 0; i < d.layout.names.size(); ++i)
    if (d.replicated[i])
      for (const auto& [off, n] : shard_pieces(d, i)) pieces.push_back(g.narrow(0, off, n));
  if (pieces.empty()) return;
  at::Tensor all = at::cat(pieces);
  {
    trace::Span span("tp sum of replicated gradients", trace::kWait);
    comm::all_reduce_sum(all, d.tp);
  }
  int64_t k = 0;
  for (at::Tensor& p : pieces) p.copy_(all.narrow(0, k, p.numel())), k += p.numel();
}

void finish_grads(DataParallel& d) {
  if (d.cfg.zero == 3) reduce_kept_units(d);
  if (d.last || d.cfg.zero == 2)
    for (Bucket& b : d.buckets)  // buckets with a parameter that got no gradient
      if (!b.launched) launch(d, b);
  while (!d.inflight.empty()) {
    d.inflight.front().wait();
    d.inflight.pop_front();
  }
  if (d.dp.size > 1) grad_shard(d).div_(static_cast<double>(d.dp.size));
  if (sequence_parallel(d)) sum_replicated_over_tp(d);
}

// Under tensor parallelism: this rank's squared sum per parameter, a replicated one counting 1/tp
// (so once after the tp sum); a 0-dim tensor in the gradients' dtype.
static at::Tensor tp_local_square_sum(DataParallel& d) {
  const at::Tensor g = grad_shard(d);
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < d.layout.names.size(); ++i)
    for (const auto& [off, n] : shard_pieces(d, i)) {
      at::Tensor sq = g.narrow(0, off, n).pow(2).sum();
      parts.push_back(d.replicated[i] ? sq / d.tp.size : sq);
    }
  return parts.empty() ? at::zeros({}, g.options()) : at::stack(parts).sum();
}

double grad_norm_sq(DataParallel& d) {
  const double local = d.tp.size == 1 ? sum_of_squares(grad_shard(d))
                                      : comm::sum(tp_local_square_sum(d).item<double>(), d.tp);
  return d.cfg.zero == 0 ? local : comm::sum(local, d.zg);
}

at::Tensor grad_norm_sq_on_device(DataParallel& d) {
  at::Tensor total;
  if (d.tp.size == 1) {
    total = chunk_square_sums(grad_shard(d)).sum();
  } else {
    total = tp_local_square_sum(d).to(at::kDouble);
    comm::all_reduce_sum(total, d.tp);
  }
  if (d.cfg.zero != 0) comm::all_reduce_sum(total, d.zg);
  return total;
}

at::Tensor param_shard(DataParallel& d) {
  return d.cfg.zero == 3 ? d.own.detach() : d.param_flat.narrow(0, d.shard.offset, d.shard.size);
}
at::Tensor grad_shard(DataParallel& d) {
  if (d.cfg.zero == 3) {
    if (!d.own.grad().defined()) d.own.mutable_grad() = at::zeros_like(d.own);
    return d.own.grad();
  }
  return d.cfg.zero == 2 ? d.grad_own : d.grad_flat.narrow(0, d.shard.offset, d.shard.size);
}

at::Tensor tied_embedding(DataParallel& d) {
  return d.cfg.zero == 3 ? zero3_tied_embedding(d) : d.model->wte.detach();
}

void add_tied_embedding_grad(DataParallel& d, const at::Tensor& g) {
  if (d.cfg.zero == 3) return zero3_add_tied_embedding_grad(d, g);
  at::Tensor& mine = d.model->wte.mutable_grad();
  mine.defined() ? mine.add_(g) : (mine = g);
}

at::Tensor full_params(DataParallel& d) {
  if (d.cfg.zero == 3) throw UserError("parallel: ZeRO 3 keeps no whole copy of the parameters; use zero <= 2 here");
  return d.param_flat;
}

void gather_params(DataParallel& d) {
  if (d.cfg.zero == 0 || d.cfg.zero == 3 || d.zg.size == 1) return;
  torch::NoGradGuard no_grad;
  comm::all_gather_into(d.param_flat, param_shard(d), d.zg);
}

const FlatLayout& layout(const DataParallel& d) { return d.layout; }
std::vector<Segment> segments(const DataParallel& d) {
  if (d.cfg.zero == 3) return zero3_segments(d);
  const int64_t size = std::min(d.shard.offset + d.shard.size, d.layout.numel) - d.shard.offset;
  if (size <= 0) return {};
  return {Segment{0, d.shard.offset, size}};
}
bool sequence_parallel(const DataParallel& d) { return d.cfg.sequence_parallel && d.tp.size > 1; }

int64_t zero_stage(const DataParallel& d) { return d.cfg.zero; }
const comm::Group& zero_group(const DataParallel& d) { return d.cfg.zero == 0 ? d.dp : d.zg; }
int64_t param_bytes(const DataParallel& d) { return (d.cfg.zero == 3 ? d.own : d.param_flat).numel() * 4; }
int64_t grad_bytes(const DataParallel& d) {
  int64_t staging = 0;
  for (const auto& s : d.staging) staging += s.numel() * 4;
  const at::Tensor& g = d.cfg.zero == 3 ? d.own : d.grad_flat.defined() ? d.grad_flat : d.grad_own;
  return g.numel() * 4 + staging;
}

}  // namespace slm::parallel
