// train/step.cpp: one optimizer step and one evaluation: the hot path, read top to bottom.
// Owns: make_trainer, train_step, evaluate, step_flops. No logging or file I/O. train_step is the
// same for one process and for data parallelism / ZeRO: parallel/data_parallel.h hides the difference.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <tuple>

#include "data/batch_tensor.h"
#include "comm/collectives.h"
#include "comm/probe.h"
#include "model/gpu_attention.h"
#include "model/hf_import.h"
#include "parallel/pipeline/stage.h"
#include "planner/cost_model.h"
#include "parallel/diloco.h"
#include "parallel/plan_groups.h"
#include "parallel/sync_by_time.h"
#include "parallel/tensor/model.h"
#include "train/auto_plan.h"
#include "train/cuda_info.h"
#include "train/device.h"
#include "util/torch_compat.h"
#include "train/memory_caps.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/runtime.h"
#include "tokenizer/hf_files.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/trace.h"

namespace slm::train {
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point& t) {
  auto now = Clock::now();
  double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

Trainer::~Trainer() = default;

// dist.topology = "probe": measure the links now (a few seconds; comm/probe.h) and let the
// data-parallel all-reduce pick its channels and chunks from them; rank 0 keeps the file.
static comm::ProbeResult probe_at_start(Trainer& t) {
  if (t.world.world.size == 1) return {};
  comm::ProbeConfig quick;  // two sizes suffice for the α-β fit: 28 pairs in turns for 8 ranks
  quick.sizes = {4, 2 << 20};
  quick.repeats = 2;
  quick.collectives = false;
  const comm::ProbeResult r = comm::probe_links(t.world, quick);
  t.world.cfg.wan.link = comm::widest_class(r);
  if (t.world.world.rank != 0) return r;
  std::filesystem::create_directories(t.cfg.run.dir);
  write_file_atomic(t.cfg.run.dir + "/topology.json", comm::probe_json(r));
  std::fprintf(stderr, "probe: %d ranks in %.1f s; slowest links: %.2f ms one way, %.0f Mbit/s (%s/topology.json)\n",
               r.world, r.elapsed_s, t.world.cfg.wan.link.alpha_s * 1e3, t.world.cfg.wan.link.beta_Bps * 8 / 1e6,
               t.cfg.run.dir.c_str());
  return r;
}

// parallel.plan = "auto": profile, search, and set the run up with the best layout; rank 0 keeps
// the plan (with its [set] table) and says what was chosen and why. Returns why ranks are left
// out ("" = none).
static std::string plan_auto(Trainer& t, const comm::ProbeResult& probe) {
  const AutoPlan a = plan_at_start(t.cfg, t.world, probe, t.device, t.precision, t.seq_len);
  t.planned = a.plan;
  t.predicted_step_s = a.predicted.step_s;
  if (t.world.world.rank != 0) return a.left_out;
  std::filesystem::create_directories(t.cfg.run.dir);
  write_file_atomic(t.cfg.run.dir + "/plan.toml", a.toml);
  std::fprintf(stderr,
               "plan auto: %s\n  predicted %.3f s/step (%.0f tokens/s, bubble %.0f%%, %.1f MiB across sites), %lld "
               "layouts in %.2f s; profile %s in %.1f s; plan in %s/plan.toml\n",
               planner::describe_candidate(a.chosen).c_str(), a.predicted.step_s, a.predicted.tokens_per_s,
               100 * a.predicted.bubble, a.predicted.cross_site_bytes / (1 << 20), static_cast<long long>(a.evaluated),
               a.search_s, a.profile_source.c_str(), a.profile_s, t.cfg.run.dir.c_str());
  if (!a.left_out.empty()) std::fprintf(stderr, "plan auto: %s\n", a.left_out.c_str());
  return a.left_out;
}

// A plan on some of the job's ranks (job_ranks: a site left out): the others say so and return
// false (their process exits cleanly); the kept ranks go on as a job of their own.
static bool keep_plan_ranks(Trainer& t, const std::string& why) {
  parallel::Plan& plan = *t.planned;
  parallel::validate_plan(plan, model_shape(t.cfg.model), t.world.world.size);
  std::vector<int> keep = plan.job_ranks;
  plan.job_ranks.clear();  // from here on, plan ranks are the (shrunk) world's
  if (keep.empty() || keep.size() == static_cast<size_t>(t.world.world.size)) return true;
  if (std::find(keep.begin(), keep.end(), t.world.world.rank) == keep.end()) {
    std::fprintf(stderr, "rank %d: left out by the plan (%s); exiting\n", t.world.world.rank, why.c_str());
    return false;
  }
  t.world = comm::shrink_world(t.world, keep);
  return true;
}

// The sites that ZeRO shards within (zero_scope = "site") and that DiLoCo syncs across.
static void scope_to_sites(parallel::Plan& plan, const Config& cfg) {
  if (cfg.parallel.zero_scope == "site") plan.zero_ranks_per_site = cfg.dist.wan.ranks_per_site;
  if (cfg.sync.mode == "diloco") plan.sync_ranks_per_site = cfg.dist.wan.ranks_per_site;
}

// Whether layout flags give a valid plan on this world within every rank's memory cap (an elastic
// restart's fallback asks). Gathers the caps once, collectively, so call it on every rank.
static std::function<bool(const parallel::PlanFlags&)> fits_memory(const Trainer& t) {
  const Config& cfg = t.cfg;
  const auto caps = rank_memory_caps(cfg, t.world, t.device);
  return [&t, &cfg, caps](const parallel::PlanFlags& f) {
    try {
      parallel::Plan p =
          parallel::plan_from_flags(f, cfg.model.n_layer, t.world.world.size, cfg.batch.batch_size, cfg.batch.micro_batch);
      scope_to_sites(p, cfg);
      parallel::check_memory_caps(p, model_shape(cfg.model, t.precision), t.seq_len, caps);
      return true;
    } catch (const UserError&) {
      return false;
    }
  };
}

// The pipeline part of make_trainer: plan, groups, this rank's share of the model.
static void apply_plan(Trainer& t) {
  const Config& cfg = t.cfg;
  auto pipe = std::make_unique<parallel::pipeline::Pipeline>();
  parallel::Plan& plan = pipe->plan;
  plan = *t.planned;
  const parallel::ModelShape shape = model_shape(cfg.model, t.precision);  // validated by keep_plan_ranks
  scope_to_sites(plan, cfg);
  parallel::check_memory_caps(plan, shape, t.seq_len, rank_memory_caps(cfg, t.world, t.device));
  t.groups = parallel::make_plan_groups(t.world, plan);
  pipe->role = parallel::role_of(plan, t.world.world.rank);
  pipe->actions = parallel::pipeline::schedule_actions(plan.schedule, plan.pp, pipe->role.pipe,
                                                       static_cast<int>(plan.micro_batches), plan.virtual_stages);
  pipe->p2p = t.groups.pp, pipe->tp = t.groups.tp;
  // The whole model's layout (checkpoints use it) from shapes only; then just this rank's blocks.
  t.model_layout = parallel::make_layout(model::named_parameters(model::shapes_only(cfg.model)), 1);
  t.num_params = t.model_layout.numel;
  const parallel::RankRole role = pipe->role;
  // The default generator (dropout) starts from the seed too: LibTorch seeds it from /dev/urandom,
  // so runs with dropout would differ; every rank draws the same masks (tp ranks must). A resume
  // restores its state from the checkpoint.
  torch::manual_seed(cfg.system.seed);
  t.model = model::init_gpt2(cfg.model, cfg.system.seed,
                             [&](int64_t l) { return parallel::pipeline::holds_layer(plan, role, l); });
  if (!cfg.init.from.empty()) model::copy_parameters(model::load_hf(cfg.init.from, cfg.model.vocab_pad), t.model);
  pipe->chunks = parallel::pipeline::split_pipeline(t.model, plan, role);
  t.pipe = std::move(pipe);
}

// The run's precision: every rank resolves it ("auto" measures, cached per CPU), rank 0's counts.
static void choose_precision(Trainer& t) {
  const Config& cfg = t.cfg;
  const StepShape shape{cfg.model, cfg.batch.micro_batch, t.seq_len};
  t.precision = resolve_precision(cfg.system.precision, t.device, shape, &t.precision_reason);
  const std::vector<std::string> names{"fp32", "bf16", "fp16"};
  const auto code = std::find(names.begin(), names.end(), t.precision) - names.begin();
  std::vector<double> v{t.world.world.rank == 0 ? static_cast<double>(code) : 0.0};
  v = comm::sum(v, t.world.world);
  if (names.at(static_cast<size_t>(v[0])) != t.precision) {
    t.precision = names.at(static_cast<size_t>(v[0]));
    t.precision_reason = "rank 0's choice (" + t.precision_reason + " here)";
  }
}

// init.from: the imported model dictates the shape; its tokenizer must be the dataset's.
static void take_shape_from_hf(Config& cfg, const data::Manifest& man) {
  const model::HfConfig hc = model::read_hf_config(cfg.init.from, cfg.model.vocab_pad);
  const tokenizer::BpeModel tok = tokenizer::load_tokenizer(cfg.init.from);
  if (tokenizer::model_identity(tok) != man.tokenizer_identity)
    throw UserError(fmt::format("init: {}'s tokenizer is not the one {} was prepared with", cfg.init.from,
                                cfg.data.dir));
  cfg.model.n_layer = hc.model.n_layer, cfg.model.n_head = hc.model.n_head, cfg.model.n_embd = hc.model.n_embd;
  cfg.model.block_size = hc.model.block_size, cfg.model.vocab_size = hc.model.vocab_size;
}

std::unique_ptr<Trainer> make_trainer(const Config& cfg_in) {
  auto t = std::make_unique<Trainer>();
  t->cfg = cfg_in;
  Config& cfg = t->cfg;
  t->data = data::open_dataset(cfg.data.dir);
  if (!cfg.init.from.empty()) take_shape_from_hf(cfg, t->data.manifest);
  const int64_t V = t->data.manifest.vocab_size;
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = V;
  if (cfg.model.vocab_size != V)
    throw UserError(fmt::format("model: vocab_size {} differs from the dataset's tokenizer ({}, {})",
                                cfg.model.vocab_size, V, cfg.data.dir));
  validate(cfg);
  parallel::tensor::validate_tp(cfg.model, static_cast<int>(cfg.parallel.tp));
  t->device = resolve_device(cfg.system.device, cfg.dist.backend);
  if (t->device == "cuda") model::set_gpu_attention(cfg.system.attention, cuda_info().name);
  t->seq_len = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  t->world = comm::init_world(cfg.dist, t->device);
  Config compared = cfg;
  compared.dist.secret_file.clear();  // ranks may keep the secret in other places: rendezvous proved its content
  comm::require_same(to_toml(compared), t->world.world, "configuration");
  configure_cpu_threads(cfg.system.threads, t->world.env.local_world);
  choose_precision(*t);
  std::string why;  // why a plan leaves ranks out
  if (cfg.sync.mode == "diloco" && cfg.parallel.plan == "auto")
    throw UserError("sync: mode = \"diloco\" with parallel.plan = \"auto\": the planner chooses DiLoCo itself where it "
                    "pays when allowed (planner.allow_lossy = true, sync.mode = \"step\"); or give the in-site layout");
  if (cfg.dist.wan.topology == "probe" || cfg.parallel.plan == "auto") {
    const comm::ProbeResult probe = probe_at_start(*t);
    if (cfg.parallel.plan == "auto") why = plan_auto(*t, probe);
  }
  if (!t->planned) {
    parallel::ParallelConfig pc = cfg.parallel;
    if (t->world.env.restart > 0 && pc.plan.empty()) {  // an elastic job may come back on another world
      std::string changed;
      const parallel::PlanFlags g = parallel::fit_to_world(
          {pc.dp, pc.tp, pc.pp, pc.virtual_stages, pc.micro_batches, pc.schedule, pc.zero}, t->world.world.size,
          cfg.model.n_layer, fits_memory(*t), &changed);
      std::tie(pc.dp, pc.tp, pc.pp, pc.virtual_stages, pc.micro_batches, pc.schedule, pc.zero) =
          std::tie(g.dp, g.tp, g.pp, g.virtual_stages, g.micro_batches, g.schedule, g.zero);
      if (!changed.empty() && t->world.world.rank == 0) std::fprintf(stderr, "restart: %s\n", changed.c_str());
    }
    t->planned = parallel::resolve_plan(pc, cfg.model.n_layer, t->world.world.size, cfg.batch.batch_size,
                                        cfg.batch.micro_batch);
    if (cfg.sync.mode == "diloco" && cfg.parallel.plan.empty()) t->planned = parallel::replica_major(*t->planned);
    why = fmt::format("{} runs on job ranks [{}]", cfg.parallel.plan, fmt::join(t->planned->job_ranks, ", "));
  }
  if (!keep_plan_ranks(*t, why)) return nullptr;
  apply_plan(*t);
  parallel::tensor::validate_tp(cfg.model, t->groups.tp.size);
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
  t->scaler.enabled = cfg.system.loss_scaling == "on" || (cfg.system.loss_scaling == "auto" && t->precision == "fp16");
  t->scaler.scale = cfg.system.loss_scale_init;
  t->scaler.growth_interval = cfg.system.loss_scale_growth_interval;
  if (t->device != "cpu") {
    for (auto& [name, p] : model::named_parameters(t->model)) p.set_data(p.data().to(t->device));
    if (t->model.head.defined()) t->model.head.set_data(t->model.head.data().to(t->device));
  }
  parallel::tensor::apply_tensor_parallel(t->model, t->groups.tp);
  parallel::ParallelConfig pc = cfg.parallel;
  pc.zero = t->pipe->plan.zero;
  t->dp = parallel::apply_data_parallel(t->model, pc, t->groups.dp, t->groups.tp);
  t->pipe->model = &t->model;
  {
    torch::NoGradGuard no_grad;  // every rank starts from rank 0's parameters
    at::Tensor flat = parallel::param_shard(*t->dp);
    if (parallel::zero_stage(*t->dp) == 0) comm::broadcast(flat, 0, t->groups.dp);
  }
  if (cfg.sync.mode == "diloco" && parallel::zero_stage(*t->dp) == 3)
    t->outer = parallel::make_sharded_outer_sync(cfg.sync, parallel::param_shard(*t->dp), parallel::segments(*t->dp),
                                                 parallel::layout(*t->dp), cfg.model.n_layer, t->groups.dp,
                                                 t->groups.outer);
  else if (cfg.sync.mode == "diloco")
    t->outer = parallel::make_outer_sync(cfg.sync, parallel::full_params(*t->dp), parallel::layout(*t->dp),
                                         cfg.model.n_layer, t->groups.dp, t->groups.outer);
  if (t->outer && cfg.sync.by == "time") {
    const size_t S = static_cast<size_t>(parallel::num_sites(*t->outer));
    t->round_steps.assign(S, cfg.sync.inner_steps);
    if (!cfg.sync.site_speeds.empty()) {
      const std::vector<double> v = parallel::parse_site_speeds(cfg.sync.site_speeds);
      if (v.size() != S)
        throw UserError(fmt::format("sync: site_speeds has {} value(s) for {} sites", v.size(), S));
      t->round_steps = parallel::round_steps(v, cfg.sync.inner_steps, cfg.sync.max_speedup);
    }
  }
  for (int rank : t->groups.dp.ranks)
    t->dp_sequences += t->pipe->plan.micro_batch[static_cast<size_t>(parallel::role_of(t->pipe->plan, rank).replica)];
  t->adam = make_adamw(parallel::layout(*t->dp), parallel::segments(*t->dp), parallel::param_shard(*t->dp));
  release_free_memory();
  return t;
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
      auto [x, y] = data::batch_tensors(b);
      out[static_cast<size_t>(i)].push_back({x.to(t.device).clone(), y.to(t.device).clone()});  // x, y view b's vectors
    }
  }
  return out;
}

// One inner optimizer step on `batches`; adds to s. `share` = this replica's samples per micro-batch
// over the global step's samples (its loss counts so).
static void inner_step(Trainer& t, std::vector<parallel::pipeline::MicroBatch>& batches, double share, StepStats& s) {
  auto clock = Clock::now();
  const parallel::Plan& plan = t.pipe->plan;
  const double mine = static_cast<double>(plan.micro_batch[static_cast<size_t>(t.pipe->role.replica)]);
  parallel::zero_grads(*t.dp);
  parallel::pipeline::PendingNorm norm = parallel::pipeline::post_norm_receives(*t.pipe, *t.dp);
  // Each micro-batch loss counts by its tokens: this replica's share of its dp group's sequences in
  // the step, times the group's size (gradients are averaged over dp: every replica, or one site's under DiLoCo).
  const double weight = mine * t.groups.dp.size / static_cast<double>(t.dp_sequences * plan.micro_batches);
  parallel::pipeline::ScheduleResult run;
  {
    AutocastGuard autocast(t.precision, t.device);
    run = parallel::pipeline::run_actions(*t.pipe, *t.dp, t.pipe->actions, batches, weight,
                                          t.scaler.enabled ? t.scaler.scale : 1.0, /*train=*/true);
  }
  s.loss += t.groups.tp.rank == 0 ? run.loss * share : 0.0;
  s.compute_s += run.compute_s, s.schedule_s += run.wall_s;
  seconds_since(clock);
  {
    trace::Span span("reduce gradients", trace::kWait);
    parallel::finish_grads(*t.dp);
  }
  at::Tensor grad = parallel::grad_shard(*t.dp);
  s.loss_scale = t.scaler.enabled ? t.scaler.scale : 0.0;
  if (t.scaler.enabled) grad.mul_(1.0 / t.scaler.scale);  // unscale before any norm (no overflow)
  {
    trace::Span span("gradient norm", trace::kWait);
    s.grad_norm = std::sqrt(parallel::pipeline::pipeline_grad_norm_sq(*t.pipe, *t.dp, norm));  // same on every rank
  }
  s.comm_s += seconds_since(clock);
  s.lr = lr_at(t.cfg.schedule, t.cfg.optim.lr, t.step);
  const bool skipped = !update_loss_scale(t.scaler, std::isfinite(s.grad_norm));
  s.next_scale = t.scaler.enabled ? t.scaler.scale : 0.0;
  s.skipped = s.skipped || skipped;
  if (!skipped) {
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
  {
    trace::Span span("data");
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
    if (s.outer_merged > 0) parallel::pipeline::sync_tied_weights(*t.pipe);
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
    AutocastGuard autocast(precision, device);
    total += loss(x.to(device), y.to(device)).item<double>();
  }
  return total / static_cast<double>(n);
}

double evaluate(Trainer& t) {
  data::Loader val(t.data.val, {t.seq_len, 0, /*shuffle=*/false});
  const int64_t micro = std::min(t.cfg.batch.micro_batch, val.num_samples());
  const int64_t n = std::max<int64_t>(1, std::min(t.cfg.eval.batches, val.num_samples() / micro));
  std::vector<parallel::pipeline::MicroBatch> batches;  // every replica evaluates the same batches
  for (int64_t i = 0; i < n; ++i) {
    data::Batch b = val.next(micro);
    auto [x, y] = data::batch_tensors(b);
    batches.push_back({x.to(t.device).clone(), y.to(t.device).clone()});  // x, y view b's vectors
  }
  parallel::pipeline::ScheduleResult run;
  {
    AutocastGuard autocast(t.precision, t.device);
    run = parallel::pipeline::run_actions(*t.pipe, *t.dp, parallel::pipeline::forward_actions(static_cast<int>(n),
                                          static_cast<int>(t.pipe->chunks.size())), batches, 1.0, 1.0, /*train=*/false);
  }
  const bool reporter = t.pipe->chunks.back().last && t.pipe->role.replica == 0 && t.groups.tp.rank == 0;
  return comm::sum(reporter ? run.loss / static_cast<double>(n) : 0.0, t.groups.world);
}

parallel::ModelShape model_shape(const model::GPT2Config& m, const std::string& precision) {
  return {m.n_layer, m.n_head, m.n_embd, m.padded_vocab(), m.block_size, m.recompute, precision == "fp32" ? 4 : 2,
          !compat::kHasSdpa};
}

double step_flops(const model::GPT2Config& m, int64_t batch, int64_t s) {
  return planner::model_flops(model_shape(m, "fp32"), batch, s);  // the planner's count: one formula
}

}  // namespace slm::train
