// cli/train_cmd.cpp: `slm train`: pretrain a GPT-2 model from a TOML config plus overrides.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "train/config.h"
#include "train/loop.h"

namespace slm::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> set;
  bool resume = false, print_config = false;
  int64_t stop_at = 0;
};

}  // namespace

void add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand(
      "train", "pretrain a GPT-2 model on a prepared dataset (configs/*.toml; docs/training.md)");
  cmd->add_option("-c,--config", a->config, "TOML configuration (e.g. configs/tiny.toml)");
  cmd->add_option("--set", a->set,
                  "override one key, section.key=value (repeatable), e.g. --set data.dir=runs/demo/data");
  add_layout_flags(cmd, a->set);
  cmd->add_option_function<std::string>(
      "--sync-by", [a](const std::string& v) { a->set.push_back("sync.by=" + v); },
      "DiLoCo: steps (every site inner_steps per sync) | time (faster sites take more; = --set sync.by=...)");
  cmd->add_flag("--resume", a->resume, "continue from the newest valid checkpoint in run.dir");
  cmd->add_option("--stop-at", a->stop_at,
                  "stop after this step with a checkpoint (0 = run to schedule.max_steps); continue "
                  "later with --resume")
      ->capture_default_str();
  cmd->add_flag("--print-config", a->print_config, "print the effective configuration and exit");
  cmd->callback([a] {
    train::Config cfg = train::load_config(a->config, a->set);
    if (a->print_config) {
      std::printf("%s", train::to_toml(cfg).c_str());
      return;
    }
    int rc = train::run_training(cfg, a->resume, a->stop_at);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace slm::cli
