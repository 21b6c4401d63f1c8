// train/step.cpp: one optimizer step and one evaluation: the hot path, read top to bottom.
// Owns: make_trainer, train_step, evaluate, step_flops. No logging or file I/O.
#include <torch/torch.h>

#include <chrono>
#include <fmt/format.h>

#include "data/batch_tensor.h"
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
  t->device = resolve_device(cfg.system.device);
  t->precision = resolve_precision(cfg.system.precision, t->device, &t->precision_reason);
  t->model = model::init_gpt2(cfg.model, cfg.system.seed);
  for (auto& [name, p] : model::named_parameters(t->model)) {
    if (t->device != "cpu") p.set_data(p.data().to(t->device));
    t->params.push_back(p);
  }
  t->optim = make_adamw(model::named_parameters(t->model), cfg.optim);
  return t;
}

StepStats train_step(Trainer& t) {
  StepStats s;
  auto clock = Clock::now();
  const int64_t micro = t.cfg.batch.micro_batch, n_micro = t.cfg.batch.batch_size / micro;
  t.optim->zero_grad();
  for (int64_t m = 0; m < n_micro; ++m) {
    data::Batch b = t.train_loader->next(micro);
    auto [x, y] = data::batch_tensors(b);
    x = x.to(t.device), y = y.to(t.device);
    s.data_s += seconds_since(clock);
    at::Tensor loss;
    {
      AutocastGuard autocast(t.precision, t.device);
      loss = model::forward_loss(t.model, x, y, /*train=*/true) / static_cast<double>(n_micro);
    }
    s.forward_s += seconds_since(clock);
    loss.backward();
    s.loss += loss.item<double>();
    s.backward_s += seconds_since(clock);
  }
  s.grad_norm = clip_grad_norm(t.params, t.cfg.optim.grad_clip);
  s.lr = lr_at(t.cfg.schedule, t.cfg.optim.lr, t.step);
  set_lr(*t.optim, s.lr);
  t.optim->step();
  s.optim_s = seconds_since(clock);
  s.tokens = t.cfg.batch.batch_size * t.seq_len;
  t.step += 1;
  return s;
}

double mean_loss(const model::GPT2& m, data::Loader& loader, int64_t micro, int64_t batches,
                 const std::string& precision, const std::string& device) {
  torch::NoGradGuard no_grad;
  micro = std::min(micro, loader.num_samples());
  const int64_t n = std::max<int64_t>(1, std::min(batches, loader.num_samples() / micro));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    data::Batch b = loader.next(micro);
    auto [x, y] = data::batch_tensors(b);
    AutocastGuard autocast(precision, device);
    total += model::forward_loss(m, x.to(device), y.to(device), false).item<double>();
  }
  return total / static_cast<double>(n);
}

double evaluate(Trainer& t) {
  data::Loader val(t.data.val, {t.seq_len, 0, /*shuffle=*/false});
  return mean_loss(t.model, val, t.cfg.batch.micro_batch, t.cfg.eval.batches, t.precision, t.device);
}

double step_flops(const model::GPT2Config& m, int64_t batch, int64_t s) {
  const double B = batch, h = m.n_embd, L = m.n_layer, V = m.vocab_size;
  const double k = m.recompute ? 96.0 : 72.0;  // recomputation adds one block forward
  return k * B * s * h * h * L * (1.0 + s / (6.0 * h)) + 6.0 * B * s * h * V;
}

}  // namespace slm::train
