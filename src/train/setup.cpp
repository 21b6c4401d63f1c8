// train/setup.cpp: how a run is set up, once, before its first step.
// Owns: make_trainer and its parts: join the job, open the data, choose device and precision,
// probe and plan (parallel.plan = "auto" asks autoplan/), keep the plan's ranks, build the
// pipeline stage, the parallel wrappers, DiLoCo's outer sync and the optimizer.
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <tuple>

#include "autoplan/auto_plan.h"
#include "autoplan/memory_caps.h"
#include "comm/collectives.h"
#include "comm/probe.h"
#include "data/mix.h"
#include "host/cuda_info.h"
#include "host/device.h"
#include "host/runtime.h"
#include "model/gpu_attention.h"
#include "model/hf_import.h"
#include "model/own_cuda_kernels.h"
#include "parallel/apply.h"
#include "parallel/diloco.h"
#include "parallel/pipeline/stage.h"
#include "parallel/plan_groups.h"
#include "parallel/sync_by_time.h"
#include "parallel/tensor/model.h"
#include "parallel/tensor/random.h"
#include "planner/cost_model.h"
#include "tokenizer/hf_files.h"
#include "train/device_update.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::train {
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
  t.cfg.dist.wan.link = comm::widest_class(r);
  if (t.world.world.rank != 0) return r;
  std::filesystem::create_directories(t.cfg.run.dir);
  write_file_atomic(t.cfg.run.dir + "/topology.json", comm::probe_json(r));
  std::fprintf(stderr, "probe: %d ranks in %.1f s; slowest links: %.2f ms one way, %.0f Mbit/s (%s/topology.json)\n",
               r.world, r.elapsed_s, t.cfg.dist.wan.link.alpha_s * 1e3, t.cfg.dist.wan.link.beta_Bps * 8 / 1e6,
               t.cfg.run.dir.c_str());
  return r;
}

// parallel.plan = "auto": profile, search, and set the run up with the best layout; rank 0 keeps
// the plan (with its [set] table) and says what was chosen and why. Returns why ranks are left
// out ("" = none).
static std::string plan_auto(Trainer& t, const comm::ProbeResult& probe) {
  const autoplan::AutoPlan a = autoplan::plan_at_start(t.cfg, t.world, probe, t.device, t.precision, t.seq_len);
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
  const auto caps = autoplan::rank_memory_caps(cfg, t.world, t.device);
  return [&t, &cfg, caps](const parallel::PlanFlags& f) {
    try {
      parallel::Plan p =
          parallel::plan_from_flags(f, cfg.model.n_layer, t.world.world.size, cfg.batch.batch_size, cfg.batch.micro_batch);
      scope_to_sites(p, cfg);
      parallel::check_memory_caps(p, model_shape(cfg, t.precision), t.seq_len, caps);
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
  const parallel::ModelShape shape = model_shape(cfg, t.precision);  // validated by keep_plan_ranks
  scope_to_sites(plan, cfg);
  parallel::check_memory_caps(plan, shape, t.seq_len, autoplan::rank_memory_caps(cfg, t.world, t.device));
  t.groups = parallel::make_plan_groups(t.world, plan, t.cfg.dist.wan);
  pipe->role = parallel::role_of(plan, t.world.world.rank);
  pipe->actions = parallel::pipeline::schedule_actions(plan.schedule, plan.pp, pipe->role.pipe,
                                                       static_cast<int>(plan.micro_batches), plan.virtual_stages);
  pipe->p2p = t.groups.pp, pipe->tp = t.groups.tp;
  // The whole model's layout (checkpoints use it) from shapes only; then just this rank's blocks.
  t.model_layout = parallel::make_layout(model::named_parameters(model::shapes_only(cfg.model)), 1);
  t.num_params = t.model_layout.numel;
  const parallel::RankRole role = pipe->role;
  // The default generator (dropout) starts from the seed too: LibTorch seeds it from /dev/urandom,
  // so runs with dropout would differ; every rank draws the same masks (tp ranks must), but where
  // a tp rank holds its own part of an activation (parallel/tensor/random.h). A resume restores
  // both states from the checkpoint.
  torch::manual_seed(cfg.system.seed);
  parallel::tensor::seed_split_rng(cfg.system.seed, role.tp_rank);
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

// The model's vocabulary is the dataset's tokenizer's (init.from: the imported model's shape too).
static void shape_from_data(Config& cfg, const data::Dataset& data) {
  if (!cfg.init.from.empty()) take_shape_from_hf(cfg, data.manifest);
  const int64_t V = data.manifest.vocab_size;
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = V;
  if (cfg.model.vocab_size != V)
    throw UserError(fmt::format("model: vocab_size {} differs from the dataset's tokenizer ({}, {})",
                                cfg.model.vocab_size, V, cfg.data.dir));
}

// The plan: parallel.plan = "auto" (probe, profile, search), else the configured layout (an elastic
// restart on another world fits its flags to it). Returns why the plan leaves ranks out, if it does.
static std::string choose_plan(Trainer& t) {
  const Config& cfg = t.cfg;
  if (cfg.sync.mode == "diloco" && cfg.parallel.plan == "auto")
    throw UserError("sync: mode = \"diloco\" with parallel.plan = \"auto\": the planner chooses DiLoCo itself where it "
                    "pays when allowed (planner.allow_lossy = true, sync.mode = \"step\"); or give the in-site layout");
  if (cfg.dist.wan.topology == "probe" || cfg.parallel.plan == "auto") {
    const comm::ProbeResult probe = probe_at_start(t);
    if (cfg.parallel.plan == "auto") return plan_auto(t, probe);
  }
  parallel::ParallelConfig pc = cfg.parallel;
  if (t.world.env.restart > 0 && pc.plan.empty()) {  // an elastic job may come back on another world
    std::string changed;
    const parallel::PlanFlags g = parallel::fit_to_world(
        {pc.dp, pc.tp, pc.pp, pc.virtual_stages, pc.micro_batches, pc.schedule, pc.zero}, t.world.world.size,
        cfg.model.n_layer, fits_memory(t), &changed);
    std::tie(pc.dp, pc.tp, pc.pp, pc.virtual_stages, pc.micro_batches, pc.schedule, pc.zero) =
        std::tie(g.dp, g.tp, g.pp, g.virtual_stages, g.micro_batches, g.schedule, g.zero);
    if (!changed.empty() && t.world.world.rank == 0) std::fprintf(stderr, "restart: %s\n", changed.c_str());
  }
  t.planned =
      parallel::resolve_plan(pc, cfg.model.n_layer, t.world.world.size, cfg.batch.batch_size, cfg.batch.micro_batch);
  if (cfg.sync.mode == "diloco" && cfg.parallel.plan.empty()) t.planned = parallel::replica_major(*t.planned);
  return fmt::format("{} runs on job ranks [{}]", cfg.parallel.plan, fmt::join(t.planned->job_ranks, ", "));
}

// The training loader, and a check that the batch fits the training split and that each validation
// split (data.dir's, and each mixed dataset's) gives a batch where evaluation asks for one.
static void open_loaders(Trainer& t) {
  const Config& cfg = t.cfg;
  t.train_loader =
      std::make_unique<data::Loader>(t.data.train, data::LoaderOptions{t.seq_len, cfg.data.seed, true}, t.data.train_mix);
  if (cfg.batch.batch_size > t.train_loader->num_samples())
    throw UserError(fmt::format("batch: batch_size {} is more than the {} sequences of {} tokens in "
                                "the training split",
                                cfg.batch.batch_size, t.train_loader->num_samples(), t.seq_len));
  if (cfg.eval.every <= 0) return;
  const auto check = [&](const std::string& name, const std::vector<data::Shard>& split) {
    try {
      data::Loader loader(split, {t.seq_len, 0, false});
    } catch (const UserError& e) {
      throw UserError(fmt::format("validation split of {}: {} (or set eval.every = 0)", name, e.what()));
    }
  };
  check(cfg.data.dir, t.data.val);
  for (const data::NamedSplit& s : t.data.mix_val) check(s.name, s.shards);
}

// What decides whether this rank's steps can be captured as a CUDA graph (train/step_graph.h).
static GraphFacts graph_facts(const Trainer& t) {
  const Config& cfg = t.cfg;
  GraphFacts f;
  f.device = t.device;
  f.cuda_build = model::own_cuda_kernels_built();
  f.pp = t.pipe->plan.pp, f.tp = t.groups.tp.size, f.dp = t.groups.dp.size;
  f.backend = t.world.backend;
  f.dp_wan = t.groups.dp.wan != nullptr;
  f.zero = cfg.parallel.zero;
  f.dropout = cfg.model.dropout, f.recompute = cfg.model.recompute;
  f.update_on_device = t.update_on_device;
  f.traced = cfg.log.trace_steps > 0;
  return f;
}

// The step's machinery around this rank's model: loss scaling, the model on its device, the
// parallel wrappers (data parallel / ZeRO, DiLoCo's outer sync), the update's place (device or
// host), CUDA graphs, DiLoCo's round lengths and the optimizer.
static void set_up_step(Trainer& t) {
  const Config& cfg = t.cfg;
  t.scaler.enabled = cfg.system.loss_scaling == "on" || (cfg.system.loss_scaling == "auto" && t.precision == "fp16");
  t.scaler.scale = cfg.system.loss_scale_init;
  t.scaler.growth_interval = cfg.system.loss_scale_growth_interval;
  if (t.device != "cpu") {
    for (auto& [name, p] : model::named_parameters(t.model)) p.set_data(p.data().to(t.device));
    if (t.model.head.defined()) t.model.head.set_data(t.model.head.data().to(t.device));
  }
  parallel::Applied applied =
      parallel::apply_parallel(t.model, t.pipe->plan, cfg.parallel, cfg.sync, cfg.model.n_layer, t.groups);
  t.dp = std::move(applied.dp);
  model::set_own_cuda_kernels(cfg.system.cuda_kernels != "off");
  t.update_on_device = device_update_applies(cfg.system.device_update, t.device, cfg.optim.name, &t.update_reason);
  if (t.update_on_device) t.scalars = make_update_scalars(parallel::param_shard(*t.dp));
  if (graphs_apply(cfg.system.cuda_graphs, graph_facts(t), &t.graph_reason))
    t.graph = make_step_graph(graph_comm(t.groups, cfg.dist.timeout_s), t.groups.world.rank == 0);
  t.outer = std::move(applied.outer);
  t.pipe->model = &t.model;
  if (t.outer && cfg.sync.by == "time") {
    const size_t S = static_cast<size_t>(parallel::num_sites(*t.outer));
    t.round_steps.assign(S, cfg.sync.inner_steps);
    if (!cfg.sync.site_speeds.empty()) {
      const std::vector<double> v = parallel::parse_site_speeds(cfg.sync.site_speeds);
      if (v.size() != S) throw UserError(fmt::format("sync: site_speeds has {} value(s) for {} sites", v.size(), S));
      t.round_steps = parallel::round_steps(v, cfg.sync.inner_steps, cfg.sync.max_speedup);
    }
  }
  for (int rank : t.groups.dp.ranks)
    t.dp_sequences += t.pipe->plan.micro_batch[static_cast<size_t>(parallel::role_of(t.pipe->plan, rank).replica)];
  t.adam = make_adamw(parallel::layout(*t.dp), parallel::segments(*t.dp), parallel::param_shard(*t.dp));
}

// Data, configuration checks, device, the job (its ranks agree on the configuration), threads,
// precision, the plan and the ranks it keeps, this rank's part of the model, the loaders and the
// step's machinery. nullptr on a rank the plan leaves out.
std::unique_ptr<Trainer> make_trainer(const Config& cfg_in) {
  auto t = std::make_unique<Trainer>();
  t->cfg = cfg_in;
  Config& cfg = t->cfg;
  t->data = data::open_mixed_dataset(cfg.data.dir, data::parse_mix(cfg.data.mix));
  shape_from_data(cfg, t->data);
  validate(cfg);
  t->seq_len = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  const int64_t sp_seq_len = cfg.parallel.sequence_parallel ? t->seq_len : 0;
  parallel::tensor::validate_tp(cfg.model, static_cast<int>(cfg.parallel.tp), sp_seq_len);
  t->device = host::resolve_device(cfg.system.device, cfg.dist.backend);
  if (t->device == "cuda") model::set_gpu_attention(cfg.system.attention, host::cuda_info().name);
  t->world = comm::init_world(cfg.dist, t->device);
  Config compared = cfg;
  compared.dist.secret_file.clear();  // ranks may keep the secret in other places: rendezvous proved its content
  comm::require_same(to_toml(compared), t->world.world, "configuration");
  host::configure_cpu_threads(cfg.system.threads, t->world.env.local_world);
  choose_precision(*t);
  if (!keep_plan_ranks(*t, choose_plan(*t))) return nullptr;
  apply_plan(*t);
  parallel::tensor::validate_tp(cfg.model, t->groups.tp.size, sp_seq_len);
  open_loaders(*t);
  set_up_step(*t);
  host::release_free_memory();
  return t;
}

}  // namespace slm::train
