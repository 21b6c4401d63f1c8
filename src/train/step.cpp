// train/step.cpp: one optimizer step and one evaluation: the hot path, read top to bottom.
// Owns: make_trainer, train_step, evaluate, step_flops. No logging or file I/O. train_step is the
// same for one process and for data parallelism / ZeRO: parallel/data_parallel.h hides the difference.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "data/batch_tensor.h"
#include "dist/collectives.h"
#include "parallel/tensor/model.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/trainer.h"
#include "util/error.h"

namespace slm::train {
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point& t) {
  auto now = Clock::now();
  double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

Trainer::~Trainer() = default;

std::unique_ptr<Trainer> make_trainer(const Config& cfg_in) {
  auto t = std::make_unique<Trainer>();
  t->cfg = cfg_in;
  Config& cfg = t->cfg;
  t->data = data::open_dataset(cfg.data.dir);
  const int64_t V = t->data.manifest.vocab_size;
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = V;
  if (cfg.model.vocab_size != V)
    throw UserError(fmt::format("model: vocab_size {} differs from the dataset's tokenizer ({}, {})",
                                cfg.model.vocab_size, V, cfg.data.dir));
  validate(cfg);
  parallel::tensor::validate_tp(cfg.model, static_cast<int>(cfg.parallel.tp));
  t->device = resolve_device(cfg.system.device);
  t->world = dist::init_world(cfg.dist, t->device);
  const int world = t->world.world.size, tp = static_cast<int>(cfg.parallel.tp);
  if (world % tp != 0) throw UserError(fmt::format("parallel: tp({}) does not divide the world size {}", tp, world));
  const int dp = cfg.parallel.dp == -1 ? world / tp : static_cast<int>(cfg.parallel.dp);
  if (dp * tp != world)
    throw UserError(fmt::format("parallel: dp({})*tp({}) = {} != world size {}", dp, tp, dp * tp, world));
  if (cfg.batch.batch_size % (cfg.batch.micro_batch * dp) != 0)
    throw UserError(fmt::format("batch: batch_size {} must be a multiple of micro_batch {} x {} "
                                "data-parallel ranks", cfg.batch.batch_size, cfg.batch.micro_batch, dp));
  dist::require_same(to_toml(cfg), t->world.world, "configuration");
  t->groups = dist::make_process_groups(t->world, {{"dp", "tp"}, {dp, tp}});  // tp fastest (innermost)
  t->seq_len = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  t->train_loader = std::make_unique<data::Loader>(t->data.train,
                                                   data::LoaderOptions{t->seq_len, cfg.data.seed, true});
  if (cfg.batch.batch_size > t->train_loader->num_samples())
    throw UserError(fmt::format("batch: batch_size {} is more than the {} sequences of {} tokens in "
                                "the training split",
                                cfg.batch.batch_size, t->train_loader->num_samples(), t->seq_len));
  if (cfg.eval.every > 0) {
    try {
      data::Loader check(t->data.val, {t->seq_len, 0, false});
    } catch (const UserError& e) {
      throw UserError(fmt::format("validation split of {}: {} (or set eval.every = 0)",
                                  cfg.data.dir, e.what()));
    }
  }
  t->precision = resolve_precision(cfg.system.precision, t->device, &t->precision_reason);
  t->scaler.enabled = cfg.system.loss_scaling == "on" || (cfg.system.loss_scaling == "auto" && t->precision == "fp16");
  t->scaler.scale = cfg.system.loss_scale_init;
  t->scaler.growth_interval = cfg.system.loss_scale_growth_interval;
  t->model = model::init_gpt2(cfg.model, cfg.system.seed);
  if (t->device != "cpu")
    for (auto& [name, p] : model::named_parameters(t->model)) p.set_data(p.data().to(t->device));
  t->num_params = model::num_parameters(t->model);
  t->model_layout = parallel::make_layout(model::named_parameters(t->model), 1);
  parallel::tensor::apply_tensor_parallel(t->model, t->groups.tp);
  t->dp = parallel::apply_data_parallel(t->model, cfg.parallel, t->groups.dp, t->groups.tp);
  {
    torch::NoGradGuard no_grad;  // every rank starts from rank 0's parameters
    at::Tensor flat = parallel::param_shard(*t->dp);
    if (parallel::zero_stage(*t->dp) == 0) dist::broadcast(flat, 0, t->groups.dp);
  }
  t->adam = make_adamw(parallel::layout(*t->dp), parallel::segments(*t->dp), parallel::param_shard(*t->dp));
  return t;
}

StepStats train_step(Trainer& t) {
  StepStats s;
  auto clock = Clock::now();
  const dist::Group& dp = t.groups.dp;
  const int64_t micro = t.cfg.batch.micro_batch, n_micro = t.cfg.batch.batch_size / (micro * dp.size);
  parallel::zero_grads(*t.dp);
  for (int64_t m = 0; m < n_micro; ++m) {
    data::Batch b = t.train_loader->next(micro, dp.rank, dp.size);
    auto [x, y] = data::batch_tensors(b);
    x = x.to(t.device), y = y.to(t.device);
    s.data_s += seconds_since(clock);
    at::Tensor loss;
    {
      AutocastGuard autocast(t.precision, t.device);
      loss = parallel::forward_loss(*t.dp, x, y, /*train=*/true) / static_cast<double>(n_micro);
    }
    s.forward_s += seconds_since(clock);
    parallel::begin_backward(*t.dp, /*last=*/m == n_micro - 1);
    (t.scaler.enabled ? loss * t.scaler.scale : loss).backward();
    s.loss += loss.item<double>();
    s.backward_s += seconds_since(clock);
  }
  parallel::finish_grads(*t.dp);
  at::Tensor grad = parallel::grad_shard(*t.dp);
  s.loss_scale = t.scaler.enabled ? t.scaler.scale : 0.0;
  if (t.scaler.enabled) grad.mul_(1.0 / t.scaler.scale);  // unscale before any norm (no overflow)
  s.grad_norm = std::sqrt(parallel::grad_norm_sq(*t.dp));  // every rank sees the same
  s.comm_s += seconds_since(clock);
  s.lr = lr_at(t.cfg.schedule, t.cfg.optim.lr, t.step);
  s.skipped = !update_loss_scale(t.scaler, std::isfinite(s.grad_norm));
  if (!s.skipped) {
    const double clip = t.cfg.optim.grad_clip;
    if (clip > 0 && s.grad_norm > clip) grad.mul_(clip / (s.grad_norm + 1e-6));
    adamw_step(t.adam, parallel::param_shard(*t.dp), grad, t.cfg.optim, s.lr);
    s.optim_s = seconds_since(clock);
    parallel::gather_params(*t.dp);
    s.comm_s += seconds_since(clock);
  }
  s.tokens = t.cfg.batch.batch_size * t.seq_len;
  t.step += 1;
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
    AutocastGuard autocast(precision, device);
    total += loss(x.to(device), y.to(device)).item<double>();
  }
  return total / static_cast<double>(n);
}

double evaluate(Trainer& t) {
  data::Loader val(t.data.val, {t.seq_len, 0, /*shuffle=*/false});
  auto loss = [&t](const at::Tensor& x, const at::Tensor& y) { return parallel::forward_loss(*t.dp, x, y, false); };
  return mean_loss(loss, val, t.cfg.batch.micro_batch, t.cfg.eval.batches, t.precision, t.device);
}

double step_flops(const model::GPT2Config& m, int64_t batch, int64_t s) {
  const double B = batch, h = m.n_embd, L = m.n_layer, V = m.vocab_size;
  const double k = m.recompute ? 96.0 : 72.0;  // recomputation adds one block forward
  return k * B * s * h * h * L * (1.0 + s / (6.0 * h)) + 6.0 * B * s * h * V;
}

}  // namespace slm::train
