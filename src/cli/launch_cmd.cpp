// cli/launch_cmd.cpp: `slm launch`: start the ranks of a distributed job on this machine
// (comm/launch.h does the work).
#include <memory>

#include "cli/checks.h"
#include "cli/commands.h"
#include "comm/launch.h"

namespace slm::cli {

void add_launch_command(CLI::App& app) {
  auto o = std::make_shared<comm::LaunchOptions>();
  auto* cmd = app.add_subcommand(
      "launch",
      "run a command as N ranks of a job: slm launch -n 4 -- slm train -c configs/tiny.toml");
  cmd->add_option("-n,--nproc", o->nproc, "ranks on this machine")->required()->check(at_least(1));
  cmd->add_option("--nnodes", o->nnodes, "machines in the job (one launcher on each)")->capture_default_str()->check(at_least(1));
  cmd->add_option("--node-rank", o->node_rank, "this machine's index, 0..nnodes-1")->capture_default_str()->check(at_least(0));
  cmd->add_option("--master", o->master,
                  "HOST:PORT of the rendezvous store on node 0 (default: 127.0.0.1 and a free port; "
                  "required with --nnodes > 1)");
  cmd->add_option("--grace", o->grace_s, "seconds between SIGTERM and SIGKILL when stopping ranks")
      ->capture_default_str()->check(at_least(0));
  cmd->add_option("--max-restarts", o->max_restarts,
                  "after a rank fails, start the job again (slm train resumes from its newest checkpoint) "
                  "up to N times; the cause goes to RUN/events.jsonl")
      ->capture_default_str()->check(at_least(0));
  cmd->add_option("--restart-delay", o->restart_delay_s, "seconds to wait before a restart")
      ->capture_default_str()->check(at_least(0));
  cmd->add_option("command", o->command, "the program to run, after --");
  cmd->callback([o] {
    int rc = comm::launch(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace slm::cli
