// cli/plan_cmd.cpp: `slm plan make` (a plan file from the layout flags) and `slm plan check` (validate
// a plan file against a world size and a model, print it readably with per-rank memory), and the
// layout flags (--dp --tp --pp --virtual-stages --micro-batches --schedule --zero) shared with
// `slm train`, where they are shorthands for --set parallel.<key>=<value>.
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <memory>

#include "autoplan/inputs.h"
#include "autoplan/memory_caps.h"
#include "cli/checks.h"
#include "cli/commands.h"
#include "data/manifest.h"
#include "host/hardware.h"
#include "parallel/plan.h"
#include "train/config.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::cli {
namespace {

struct PlanArgs {
  std::string config, plan, out, cluster, topology, profile;
  std::vector<std::string> set;
  int world = 0;
};

}  // namespace

train::Config model_config(const std::string& config, const std::vector<std::string>& set) {
  train::Config cfg = train::load_config(config, set);
  if (cfg.model.vocab_size == 0) {
    cfg.model.vocab_size = 50257;
    if (!cfg.data.dir.empty() && path_exists(cfg.data.dir)) cfg.model.vocab_size = data::read_manifest(cfg.data.dir).vocab_size;
  }
  return cfg;
}

namespace {

train::Config plan_config(const PlanArgs& a) { return model_config(a.config, a.set); }

void common_options(CLI::App* cmd, PlanArgs& a) {
  cmd->add_option("-c,--config", a.config, "training configuration (model, batch, parallel sections)");
  cmd->add_option("--set", a.set, "override one key, section.key=value (repeatable)");
  cmd->add_option("--world", a.world, "number of ranks (processes / GPUs)")->required()->check(at_least(1));
  cmd->add_option("--cluster", a.cluster, "also predict the step time on this cluster (see `slm plan auto`)");
  cmd->add_option("--topology", a.topology, "with --cluster: links measured by `slm probe`");
  cmd->add_option("--profile", a.profile, "with --cluster: compute measured by `slm profile`");
}

// With --cluster: the cost model's prediction for this plan (planner/cost_model.h).
void print_prediction(const parallel::Plan& p, const train::Config& cfg, const PlanArgs& a) {
  if (a.cluster.empty()) return;
  autoplan::PlanningInputs pi = autoplan::load_planning_inputs(cfg, a.cluster, a.topology, a.profile);
  if (pi.cluster.world() != a.world)
    throw UserError(fmt::format("{} has {} ranks, --world is {}", a.cluster, pi.cluster.world(), a.world));
  planner::CostInputs in{&pi.cluster, &pi.profile, train::model_shape(cfg, pi.precision), pi.seq_len, cfg.parallel.bucket_mb,
                         cfg.parallel.memory_cap_gb, {}};
  const planner::Candidate k = autoplan::candidate_of(p, cfg, pi.cluster);
  std::fprintf(stderr, "  %s (%s)\n", describe_prediction(planner::predict(k, in)).c_str(), planner::describe_candidate(k).c_str());
  // Per virtual stage, one micro-batch of replica 0: what a traced run (log.trace_steps, `slm
  // report`) shows as its forward and backward spans.
  for (int s = 0; s < static_cast<int>(p.stages.size()); ++s) {
    const planner::StageSeconds t = planner::stage_seconds(k, in, s, 0);
    std::fprintf(stderr, "  stage %d: forward %.1f ms, backward %.1f ms per micro-batch of %lld (replica 0%s)\n", s,
                 1e3 * t.forward, 1e3 * t.backward, static_cast<long long>(p.micro_batch.front()),
                 !pi.profile.ranks.empty() && pi.profile.ranks.front().shares_cores ? "; with every rank of its machine busy" : "");
  }
}

void print_plan(parallel::Plan p, const train::Config& cfg, const PlanArgs& a) {
  parallel::validate_plan(p, train::model_shape(cfg.model), a.world);
  if (cfg.parallel.zero_scope == "site") p.zero_ranks_per_site = cfg.dist.wan.ranks_per_site;
  const int64_t T = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  // parallel.memory_cap_gb, and with --cluster each rank's site memory
  const int plan_world = p.job_ranks.empty() ? a.world : static_cast<int>(p.job_ranks.size());
  auto caps = autoplan::configured_memory_caps(cfg, a.cluster, plan_world, p.job_ranks);
  for (auto& c : caps)  // what this process holds now stands for what the runtime will
    if (c.whole_device) c.in_use_gb = static_cast<double>(host::resident_memory_bytes()) / (1 << 30);
  parallel::check_memory_caps(p, train::model_shape(cfg), T, caps);
  std::fprintf(stderr, "%s", parallel::describe_plan(p, train::model_shape(cfg), T).c_str());
  if (std::any_of(caps.begin(), caps.end(), [](const parallel::MemoryCap& c) { return c.gb > 0; }))
    std::fprintf(stderr, "  every rank fits its memory cap (rank 0: %g GiB, %s)\n", caps[0].gb, caps[0].from.c_str());
}

}  // namespace

void add_layout_flags(CLI::App* cmd, std::vector<std::string>& sets) {
  for (auto [flag, key, help] : {std::tuple{"--dp", "dp", "data-parallel replicas (-1 = the rest)"},
                                 {"--tp", "tp", "tensor-parallel degree per stage"},
                                 {"--pp", "pp", "pipeline stages"},
                                 {"--virtual-stages", "virtual_stages", "model chunks per pipeline rank (interleaved)"},
                                 {"--micro-batches", "micro_batches", "micro-batches per replica per step"},
                                 {"--schedule", "schedule", "none | gpipe | 1f1b | interleaved"},
                                 {"--zero", "zero", "ZeRO stage 0-3"}}) {
    const std::string k = key;
    cmd->add_option_function<std::string>(
        flag, [&sets, k](const std::string& v) { sets.push_back("parallel." + k + "=" + v); },
        std::string(help) + " (= --set parallel." + k + "=...)");
  }
}

void add_plan_commands(CLI::App& app) {
  auto* plan = app.add_subcommand("plan", "make, check and (auto) choose parallel layouts (plans)");
  plan->require_subcommand(1);
  auto a = std::make_shared<PlanArgs>();
  auto* make = plan->add_subcommand("make", "write the plan of the layout flags (even stages) as TOML");
  common_options(make, *a);
  add_layout_flags(make, a->set);
  make->add_option("-o,--out", a->out, "write the plan here (default: stdout)");
  make->callback([a] {
    train::Config cfg = plan_config(*a);
    parallel::Plan p = parallel::resolve_plan(cfg.parallel, cfg.model.n_layer, a->world, cfg.batch.batch_size,
                                              cfg.batch.micro_batch);
    print_plan(p, cfg, *a);
    print_prediction(p, cfg, *a);
    if (a->out.empty()) std::printf("%s", parallel::plan_to_toml(p).c_str());
    else write_file_atomic(a->out, parallel::plan_to_toml(p));
  });
  auto b = std::make_shared<PlanArgs>();
  auto* check = plan->add_subcommand("check", "validate a plan file for a world size and model; print it");
  check->add_option("plan", b->plan, "plan file (TOML)")->required();
  common_options(check, *b);
  check->callback([b] {
    train::Config cfg = plan_config(*b);
    if (!path_exists(b->plan)) throw UserError(fmt::format("{}: no such file", b->plan));
    parallel::Plan p = parallel::parse_plan(read_file(b->plan), b->plan);
    if (p.zero < 0) p.zero = static_cast<int>(cfg.parallel.zero);
    print_plan(p, cfg, *b);
    print_prediction(p, cfg, *b);
    std::printf("%s: valid for %d ranks\n", b->plan.c_str(), b->world);
  });
  add_plan_auto_command(*plan);
}

}  // namespace slm::cli
