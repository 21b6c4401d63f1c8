// train/step.cpp: one optimizer step and one evaluation: the hot path, read top to bottom.
// Owns: train_step (its end on the host or on the device, the next step's batches loaded ahead),
// train_position, evaluate, step_flops (make_trainer is in setup.cpp). No logging or file I/O.
// train_step is the same for one process and for data parallelism / ZeRO: parallel/data_parallel.h
// hides the difference.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/collectives.h"
#include "data/batch_tensor.h"
#include "model/autocast.h"
#include "parallel/diloco.h"
#include "parallel/pipeline/stage.h"
#include "parallel/sync_by_time.h"
#include "planner/cost_model.h"
#include "train/device_update.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/trainer.h"
#include "util/torch_compat.h"
#include "util/trace.h"

namespace slm::train {
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point& t) {
  auto now = Clock::now();
  double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}


// Inner steps each replica takes in this global step: 1, or under sync.by = "time" its site's share
// of the round (replicas are laid out site by site under DiLoCo).
static std::vector<int64_t> replica_steps(const Trainer& t) {
  const parallel::Plan& plan = t.pipe->plan;
  std::vector<int64_t> q(plan.micro_batch.size(), 1);
  if (t.round_steps.empty()) return q;
  const int64_t H = t.cfg.sync.inner_steps, per_site = plan.dp / static_cast<int64_t>(t.round_steps.size());
  for (size_t r = 0; r < q.size(); ++r)
    q[r] = parallel::steps_at(t.round_steps[r / static_cast<size_t>(per_site)], H, t.step % H);
  return q;
}

// This replica's micro-batches of the next global batch, per inner step (replica r takes
// micro_batch[r] samples after the earlier replicas' in each group of sum(micro_batch)). With
// several inner steps (sync.by = "time"), inner step i reads group after group from the replicas
// that take more than i steps; with one step each this is the plain global batch.
static std::vector<std::vector<parallel::pipeline::MicroBatch>> next_micro_batches(Trainer& t,
                                                                                   const std::vector<int64_t>& q,
                                                                                   int64_t* samples) {
  const parallel::Plan& plan = t.pipe->plan;
  const size_t r = static_cast<size_t>(t.pipe->role.replica);
  *samples = 0;
  for (size_t k = 0; k < q.size(); ++k) *samples += q[k] * plan.micro_batch[k] * plan.micro_batches;
  t.train_loader->reserve(*samples);  // one epoch for the whole step, however it is split
  std::vector<std::vector<parallel::pipeline::MicroBatch>> out(static_cast<size_t>(q[r]));
  for (int64_t i = 0; i < *std::max_element(q.begin(), q.end()); ++i) {
    int64_t group = 0, offset = 0;
    for (size_t k = 0; k < q.size(); ++k) {
      if (q[k] <= i) continue;
      if (k < r) offset += plan.micro_batch[k];
      group += plan.micro_batch[k];
    }
    for (int64_t m = 0; m < plan.micro_batches; ++m) {
      if (q[r] <= i) {
        t.train_loader->next_slice(group, 0, 0);  // the other replicas' samples
        continue;
      }
      data::Batch b = t.train_loader->next_slice(group, offset, plan.micro_batch[r]);
      auto [x, y] = data::batch_on(b, t.device);
      out[static_cast<size_t>(i)].push_back({x, y});
    }
  }
  return out;
}

data::LoaderState train_position(const Trainer& t) {
  return t.prefetched ? t.prefetched->before : t.train_loader->state();
}

void restore_train_position(Trainer& t, const data::LoaderState& p) {
  t.prefetched.reset();
  t.train_loader->restore(p);
}

// Loads the next step's batches now, while this step's kernels run (the host would otherwise load
// them between this step's read-back and the next step's first kernel, the GPU idle). Not under
// sync.by = "time" (the next round's inner steps are decided after this step) nor after the last
// step. Returns the seconds it took.
static double prefetch_next(Trainer& t) {
  if (!t.round_steps.empty() || t.step + 1 >= t.cfg.schedule.max_steps || t.prefetched) return 0;
  auto clock = Clock::now();
  trace::Span span("data (next step)");
  Trainer::Prefetched p;
  p.before = t.train_loader->state();
  p.step = t.step + 1;
  p.batches = next_micro_batches(t, replica_steps(t), &p.samples);
  t.prefetched = std::move(p);
  return seconds_since(clock);
}

// Each micro-batch loss counts by its tokens: this replica's share of its dp group's sequences in
// the step, times the group's size (gradients are averaged over dp: every replica, or one site's
// under DiLoCo).
static double micro_batch_weight(const Trainer& t) {
  const parallel::Plan& plan = t.pipe->plan;
  const double mine = static_cast<double>(plan.micro_batch[static_cast<size_t>(t.pipe->role.replica)]);
  return mine * t.groups.dp.size / static_cast<double>(t.dp_sequences * plan.micro_batches);
}

// The factor each micro-batch loss is multiplied by for its backward: its weight times the loss scale.
static double loss_factor(const Trainer& t) {
  return micro_batch_weight(t) * (t.scaler.enabled ? t.scaler.scale : 1.0);
}

// The first part of an inner step: zeroes the gradients, posts the norm's receives (`norm`), runs
// this rank's schedule over `batches` and reduces the gradients, unscaled in grad_shard. The step's
// end on the device reads the loss's factor and the unscaling from t.scalars (written before the
// step), the host path takes them as numbers. Returns this replica's loss (a device tensor;
// undefined on a stage without the head); adds its times to s.
static at::Tensor gradients(Trainer& t, const std::vector<parallel::pipeline::MicroBatch>& batches,
                            parallel::pipeline::PendingNorm& norm, StepStats& s) {
  auto clock = Clock::now();
  parallel::zero_grads(*t.dp);
  norm = parallel::pipeline::post_norm_receives(*t.pipe, *t.dp);
  parallel::pipeline::ScheduleResult run;
  {
    model::AutocastGuard autocast(t.precision, t.device);
    const at::Tensor on_device = t.update_on_device ? t.scalars.loss_factor : at::Tensor();
    run = parallel::pipeline::run_actions(*t.pipe, *t.dp, t.pipe->actions, batches, {loss_factor(t), on_device},
                                          /*train=*/true);
  }
  s.compute_s += run.compute_s, s.schedule_s += run.wall_s;
  seconds_since(clock);
  {
    trace::Span span("reduce gradients", trace::kWait);
    parallel::finish_grads(*t.dp);
  }
  s.comm_s += seconds_since(clock);
  if (t.scaler.enabled) {  // before any norm (no overflow)
    at::Tensor grad = parallel::grad_shard(*t.dp);
    t.update_on_device ? grad.mul_(t.scalars.unscale) : grad.mul_(1.0 / t.scaler.scale);
  }
  return run.loss;
}

// An inner step with its end on the host: the norm (summed across pipeline stages and tp slices)
// is read first, and the skip and clip decided there.
static void step_on_host(Trainer& t, const std::vector<parallel::pipeline::MicroBatch>& batches, double share,
                         StepStats& s) {
  parallel::pipeline::PendingNorm norm;
  const at::Tensor loss = gradients(t, batches, norm, s);
  auto clock = Clock::now();
  if (loss.defined() && t.groups.tp.rank == 0) s.loss += loss.item<double>() * share;
  {
    trace::Span span("gradient norm", trace::kWait);
    s.grad_norm = std::sqrt(parallel::pipeline::pipeline_grad_norm_sq(*t.pipe, *t.dp, norm));  // same on every rank
  }
  s.comm_s += seconds_since(clock);
  const bool skipped = !update_loss_scale(t.scaler, std::isfinite(s.grad_norm));
  s.skipped = s.skipped || skipped;
  if (skipped) return;
  at::Tensor grad = parallel::grad_shard(*t.dp);
  const double clip = t.cfg.optim.grad_clip;
  if (clip > 0 && s.grad_norm > clip) grad.mul_(clip / (s.grad_norm + 1e-6));
  {
    trace::Span span("optimizer");
    adamw_step(t.adam, parallel::param_shard(*t.dp), grad, t.cfg.optim, s.lr);
  }
  s.optim_s += seconds_since(clock);
  trace::Span span("gather parameters", trace::kWait);
  parallel::gather_params(*t.dp);  // the tied head follows at the start of the next action list
  s.comm_s += seconds_since(clock);
}

// The same with its end on the device (train/device_update.h): the norm (its sums across shards,
// slices and stages as device tensors), clip, skip and update are queued behind the gradients,
// the update reading the learning rate and its number from t.scalars; the host reads the loss and
// the norm once, when all of it is queued. Under CUDA graphs (t.graph) the whole of it, from
// zeroing the gradients to the update, is captured once and replayed (train/step_graph.h): what
// changes from step to step (learning rate, update number, loss scale) is read from t.scalars.
static void step_on_device(Trainer& t, const std::vector<parallel::pipeline::MicroBatch>& batches, double share,
                           StepStats& s) {
  const auto started = Clock::now();
  t.adam.step += 1;  // this update's number; taken back below where it was skipped
  set_update_scalars(t.scalars, s.lr, t.adam.step, loss_factor(t), t.scaler.enabled ? 1.0 / t.scaler.scale : 1.0);
  const double counted = s.schedule_s + s.comm_s + s.optim_s;
  const DeviceStep run = [&](const std::vector<parallel::pipeline::MicroBatch>& b) -> std::vector<at::Tensor> {
    parallel::pipeline::PendingNorm norm;
    const at::Tensor loss = gradients(t, b, norm, s);
    auto clock = Clock::now();
    const at::Tensor norm_sq = parallel::pipeline::pipeline_grad_norm_sq_on_device(*t.pipe, *t.dp, norm);
    {
      trace::Span span("optimizer");
      clip_and_update(t.adam, parallel::param_shard(*t.dp), parallel::grad_shard(*t.dp), norm_sq, t.cfg.optim,
                      t.scalars);
    }
    s.optim_s += seconds_since(clock);
    {
      trace::Span span("gather parameters", trace::kWait);
      parallel::gather_params(*t.dp);  // a skipped update gathers the unchanged shards
    }
    s.comm_s += seconds_since(clock);
    return {loss, norm_sq};
  };
  const int rank = t.groups.world.rank;
  const auto say = [rank](const std::string& line) {
    std::fprintf(stderr, "%s%s\n", rank == 0 ? "" : fmt::format("rank {}: ", rank).c_str(), line.c_str());
  };
  const std::vector<at::Tensor> out = t.graph ? run_graphed(*t.graph, run, batches, say) : run(batches);
  const double loading = prefetch_next(t);
  s.data_s += loading;
  if (t.graph) await_replay(*t.graph);  // a replay's collectives: at most dist.timeout_s
  const auto [loss_sum, norm2] = read_back(out[0], out[1]);
  // The rest of the wall time is the step's kernels finishing (a replay's: all of it): compute.
  const double rest = std::chrono::duration<double>(Clock::now() - started).count() - loading -
                      (s.schedule_s + s.comm_s + s.optim_s - counted);
  s.schedule_s += rest, s.compute_s += rest;
  if (out[0].defined() && t.groups.tp.rank == 0) s.loss += loss_sum * share;
  s.grad_norm = std::sqrt(norm2);
  const bool skipped = !update_loss_scale(t.scaler, std::isfinite(s.grad_norm));
  if (skipped) t.adam.step -= 1;  // the fused kernel skipped the update counted above
  s.skipped = s.skipped || skipped;
}

// One inner optimizer step on `batches`; adds to s. `share` = this replica's samples per micro-batch
// over the global step's samples (its loss counts so).
static void inner_step(Trainer& t, std::vector<parallel::pipeline::MicroBatch>& batches, double share, StepStats& s) {
  s.loss_scale = t.scaler.enabled ? t.scaler.scale : 0.0;
  s.lr = lr_at(t.cfg.schedule, t.cfg.optim.lr, t.step);
  if (t.update_on_device) step_on_device(t, batches, share, s);
  else step_on_host(t, batches, share, s);
  s.next_scale = t.scaler.enabled ? t.scaler.scale : 0.0;
}

// sync.by = "time" with measured speeds, at a sync (the end of a round): the next round's inner
// steps per site from every site's mean time per inner step (one small all-reduce over every rank,
// so that all take the same numbers). Fixed speeds (sync.site_speeds) set the counts once, at start.
static void next_round(Trainer& t) {
  const parallel::SyncConfig& c = t.cfg.sync;
  const size_t S = t.round_steps.size();
  std::vector<double> v(S + 1, 0.0);  // per site: mean seconds per inner step; last: ranks that measured nothing
  const double per_site = static_cast<double>(t.groups.world.size) / static_cast<double>(S);
  v[static_cast<size_t>(parallel::site_index(*t.outer))] =
      t.inner_seconds / static_cast<double>(std::max<int64_t>(1, t.inner_count)) / per_site;
  v[S] = t.inner_count == 0 ? 1 : 0;
  v = comm::sum(v, t.groups.world);
  t.inner_seconds = 0, t.inner_count = 0;
  if (v[S] > 0) return;  // a round of only the first step after a (re)start: keep the counts
  // Averaged with the rounds before (halving their weight each round): one round's timing is noisy.
  v.resize(S);
  if (t.site_step_s.size() != S) t.site_step_s = v;
  std::vector<double> speeds;
  for (size_t s = 0; s < S; ++s) {
    t.site_step_s[s] = 0.5 * t.site_step_s[s] + 0.5 * v[s];
    speeds.push_back(1.0 / std::max(t.site_step_s[s], 1e-9));
  }
  const std::vector<int64_t> n = parallel::round_steps(speeds, c.inner_steps, c.max_speedup);
  if (n != t.round_steps && t.groups.world.rank == 0)
    std::fprintf(stderr, "%s\n",
                 fmt::format("sync: step {}: the sites take {} inner steps per {} steps (measured {:.3g} steps/s)",
                             t.step, fmt::join(n, ", "), c.inner_steps, fmt::join(speeds, ", "))
                     .c_str());
  t.round_steps = n;
}

StepStats train_step(Trainer& t) {
  StepStats s;
  trace::Span step_span("step", trace::kStep, -1, -1, t.step + 1);
  auto clock = Clock::now();
  const std::vector<int64_t> q = replica_steps(t);
  int64_t samples = 0;
  std::vector<std::vector<parallel::pipeline::MicroBatch>> batches;
  if (t.prefetched && t.prefetched->step == t.step) {  // loaded while the last step ran
    batches = std::move(t.prefetched->batches);
    samples = t.prefetched->samples;
    t.prefetched.reset();
  } else {
    trace::Span span("data");
    if (t.prefetched) restore_train_position(t, t.prefetched->before);  // loaded for another step
    batches = next_micro_batches(t, q, &samples);
  }
  s.data_s = seconds_since(clock);
  const double share = static_cast<double>(t.pipe->plan.micro_batch[static_cast<size_t>(t.pipe->role.replica)]) /
                       static_cast<double>(samples);
  for (auto& b : batches) {
    auto inner_clock = Clock::now();
    inner_step(t, b, share, s);
    if (t.warmed_up) t.inner_seconds += seconds_since(inner_clock), t.inner_count += 1;
  }
  t.warmed_up = true;
  clock = Clock::now();
  s.tokens = samples * t.seq_len;
  t.step += 1;
  if (t.outer) {  // DiLoCo: start the outer syncs that are due, merge those that have arrived
    const int64_t H = t.cfg.sync.inner_steps, pos = t.step % H == 0 ? H : t.step % H;
    if (!t.round_steps.empty()) {  // by time: each site's Δ counts by the inner steps it covers
      std::vector<int64_t> done;
      for (int64_t n : t.round_steps) done.push_back(parallel::steps_before(n, H, pos));
      parallel::set_delta_weight(*t.outer, parallel::delta_weight(done, parallel::site_index(*t.outer)));
    }
    s.outer_merged = parallel::after_inner_step(*t.outer, t.step);
    if (t.step == t.cfg.schedule.max_steps) s.outer_merged += parallel::finish_outer(*t.outer, t.step);  // one model
    if (s.outer_merged > 0) parallel::pipeline::sync_tied_weights(*t.pipe, *t.dp);
    if (!t.round_steps.empty() && t.cfg.sync.site_speeds.empty() && t.step % H == 0) next_round(t);
    s.outer_s = seconds_since(clock);
  }
  return s;
}

double mean_loss(const LossFn& loss, data::Loader& loader, int64_t micro, int64_t batches,
                 const std::string& precision, const std::string& device) {
  torch::NoGradGuard no_grad;
  micro = std::min(micro, loader.num_samples());
  const int64_t n = std::max<int64_t>(1, std::min(batches, loader.num_samples() / micro));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    data::Batch b = loader.next(micro);
    auto [x, y] = data::batch_tensors(b);
    model::AutocastGuard autocast(precision, device);
    total += loss(x.to(device), y.to(device)).item<double>();
  }
  return total / static_cast<double>(n);
}

double evaluate(Trainer& t, const std::vector<data::Shard>& split) {
  data::Loader val(split, {t.seq_len, 0, /*shuffle=*/false});
  const int64_t micro = std::min(t.cfg.batch.micro_batch, val.num_samples());
  const int64_t n = std::max<int64_t>(1, std::min(t.cfg.eval.batches, val.num_samples() / micro));
  std::vector<parallel::pipeline::MicroBatch> batches;  // every replica evaluates the same batches
  for (int64_t i = 0; i < n; ++i) {
    data::Batch b = val.next(micro);
    auto [x, y] = data::batch_on(b, t.device);
    batches.push_back({x, y});
  }
  parallel::pipeline::ScheduleResult run;
  {
    model::AutocastGuard autocast(t.precision, t.device);
    run = parallel::pipeline::run_actions(*t.pipe, *t.dp, parallel::pipeline::forward_actions(static_cast<int>(n),
                                          static_cast<int>(t.pipe->chunks.size())), batches, {}, /*train=*/false);
  }
  const bool reporter = t.pipe->chunks.back().last && t.pipe->role.replica == 0 && t.groups.tp.rank == 0;
  return comm::sum(reporter ? run.loss.item<double>() / static_cast<double>(n) : 0.0, t.groups.world);
}

parallel::ModelShape model_shape(const model::GPT2Config& m, const std::string& precision, bool sequence_parallel) {
  return {m.n_layer, m.n_head, m.n_embd, m.padded_vocab(), m.block_size, m.recompute, precision == "fp32" ? 4 : 2,
          !compat::kHasSdpa, sequence_parallel};
}

parallel::ModelShape model_shape(const Config& cfg, const std::string& precision) {
  return model_shape(cfg.model, precision, cfg.parallel.sequence_parallel);
}

double blocks_bytes(const model::GPT2Config& m, int64_t layers, int64_t micro_batch, int64_t seq_len,
                    const std::string& precision) {
  model::GPT2Config some = m;
  some.n_layer = layers;
  const parallel::Plan p = parallel::plan_from_flags({}, layers, 1, micro_batch, micro_batch);
  return parallel::estimate_memory(p, model_shape(some, precision), seq_len, 0).total();
}

double step_flops(const model::GPT2Config& m, int64_t batch, int64_t s) {
  return planner::model_flops(model_shape(m, "fp32"), batch, s);  // the planner's count: one formula
}

}  // namespace slm::train
