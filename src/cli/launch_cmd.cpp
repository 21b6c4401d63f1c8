// cli/launch_cmd.cpp: `slm launch`: start the ranks of a distributed job on this machine
// (comm/launch.h does the work).
#include <charconv>
#include <memory>
#include <system_error>

#include "cli/checks.h"
#include "cli/commands.h"
#include "comm/elastic.h"
#include "comm/launch.h"

namespace slm::cli {

void add_launch_command(CLI::App& app) {
  auto o = std::make_shared<comm::LaunchOptions>();
  auto* cmd = app.add_subcommand(
      "launch",
      "run a command as N ranks of a job: slm launch -n 4 -- slm train -c configs/tiny.toml");
  cmd->add_option("-n,--nproc", o->nproc, "ranks on this machine")
      ->required()
      ->check(in_range(1, comm::kMaxLocalRanks));
  auto nnodes = std::make_shared<std::string>("1");
  cmd->add_option("--nnodes", *nnodes,
                  "machines in the job (one launcher on each); MIN:MAX makes it elastic: restarts across "
                  "machines, shrinking to the survivors and growing back")
      ->capture_default_str();
  cmd->add_option("--node-rank", o->node_rank,
                  "this machine's index, 0..nnodes-1 (elastic: 0 serves the launchers' rendezvous, others "
                  "are numbered as they join)")
      ->capture_default_str()->check(at_least(0));
  cmd->add_option("--rejoin-timeout", o->rejoin_timeout_s,
                  "elastic: seconds a round waits for machines beyond MIN (after a failure: for the lost ones)")
      ->capture_default_str()->check(at_least(0));
  cmd->add_option("--join-timeout", o->join_timeout_s, "elastic: seconds a round waits for MIN machines")
      ->capture_default_str()->check(at_least(1));
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
  cmd->callback([o, nnodes] {
    const size_t colon = nnodes->find(':');
    // Whole numbers only, nothing after them ("1:2:3" and "1:2x" are refused, not read as 1:2).
    const auto whole = [&](const std::string& part) {
      int v = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
      if (part.empty() || ec != std::errc() || end != part.data() + part.size())
        throw CLI::ValidationError("--nnodes", *nnodes + " is not N or MIN:MAX");
      return v;
    };
    if (colon == std::string::npos) {
      o->nnodes = whole(*nnodes);
    } else {
      o->min_nodes = whole(nnodes->substr(0, colon));
      o->nnodes = whole(nnodes->substr(colon + 1));
    }
    if (o->nnodes < 1 || (colon != std::string::npos && (o->min_nodes < 1 || o->min_nodes > o->nnodes)))
      throw CLI::ValidationError("--nnodes", *nnodes + " needs N >= 1, or 1 <= MIN <= MAX");
    int rc = o->min_nodes > 0 ? comm::launch_elastic(*o) : comm::launch(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace slm::cli
