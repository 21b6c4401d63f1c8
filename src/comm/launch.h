// comm/launch.h: `slm launch`, a torchrun-style launcher for the ranks of one machine.
// Owns: LaunchOptions and launch(). Starts nproc children with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, prefixes every line they print with "[rank] ",
// forwards SIGINT/SIGTERM to them, and when one rank fails (non-zero exit or killed) stops the
// others: SIGTERM first, SIGKILL after a grace period. Children die with the launcher
// (PR_SET_PDEATHSIG), so no orphans are left behind. With max_restarts > 0 a failed job is started
// again (all ranks, a fresh store port) up to that many times, unless the launcher itself was
// stopped or the failure was an input or usage error (exit 1 or 2); the ranks see SLM_RESTART_COUNT (0 on the
// first start) and SLM_RESTART_CAUSE ("rank 1 was killed by signal 9"), and `slm train` resumes
// from its newest checkpoint when the count is above 0. Multi-machine jobs run one launcher per
// machine with --nnodes/--node-rank/--master; elastic jobs (--nnodes MIN:MAX) go through
// comm/elastic.h, which runs the ranks of each round with run_ranks(). No torch here.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace slm::comm {

struct LaunchOptions {
  int nproc = 1;             // ranks on this machine
  int nnodes = 1;            // machines in the job (elastic: the most)
  int min_nodes = 0;         // elastic (--nnodes MIN:MAX): the fewest machines to go on with; 0 = fixed
  double rejoin_timeout_s = 30;  // elastic: how long a round waits for machines beyond MIN
  double join_timeout_s = 600;   // elastic: how long a round waits for MIN machines
  std::string rank_addr;     // elastic: where ranks reach rank 0's store ("" = --master's host; the
                             // testbed's ranks live in namespaces that cannot see the launchers')
  int node_rank = 0;         // this machine's index; its ranks are node_rank*nproc + [0, nproc)
  std::string master;        // HOST:PORT of rank 0's rendezvous store; "" = 127.0.0.1, a free port
  double grace_s = 30;       // after a failure, seconds between SIGTERM and SIGKILL for the rest
  int max_restarts = 0;      // after a failure, start every rank again up to this many times
  double restart_delay_s = 1;  // pause before a restart
  std::vector<std::string> command;  // program and arguments, run once per rank
  // Optional, per local rank: words put before the command (the testbed runs each rank inside
  // its network namespace: {"ip", "netns", "exec", "geo-r3"}).
  std::vector<std::vector<std::string>> prefix;
};

// Runs the job; returns the exit code for the launcher: 0 if every rank succeeded, else the
// first failing rank's code (128 + signal if it was killed) of the last start. UserError on bad
// options.
int launch(const LaunchOptions& o);

// The most ranks one launcher starts and the most machines a job has: node_rank * nproc and the
// world size stay ints, and a mistyped -n 100000 is refused instead of forking until the machine
// runs out of processes.
inline constexpr int kMaxLocalRanks = 1024;
inline constexpr int kMaxNodes = 65536;
// UserError unless nproc and nnodes are within those bounds; raises the soft open-file limit to
// what the ranks' output pipes need (two per rank), or says in one line that `ulimit -n` is short.
void check_rank_counts(const LaunchOptions& o);

// How one start of the ranks of this machine ended.
struct Outcome {
  int code = 0;          // the launcher's exit code: the first failing rank's
  bool by_user = false;  // the launcher itself was signalled (Ctrl-C, SIGTERM): no restart
  bool stopped = false;  // stop_check asked for the stop (cause: its answer)
  std::string cause;     // "rank 1 was killed by signal 9"
};

// Starts the local ranks of o (ranks node_rank*nproc + [0, nproc) of nnodes*nproc) once, with the
// restart count and cause in their environment, and waits for all of them; the first rank that
// fails stops the rest. stop_check (if set) is asked about once a second; a non-empty answer stops
// the ranks (SIGTERM, then SIGKILL after the grace period) and becomes the cause.
Outcome run_ranks(const LaunchOptions& o, const std::string& addr, const std::string& port, int restart,
                  const std::string& cause, const std::function<std::string()>& stop_check);
// Why a start that ended with `code` is not worth another ("" when it is): an input error (exit 1:
// a missing file, a bad value, a run that needs --resume) or a usage error (exit 2) would fail the
// same way again. A peer's failure (exit 4, util/error.h JobError), a signal or a crash is restarted.
std::string not_restartable(int code);
// The line and exit code (128 + signal) of a launcher stopped by a signal between two starts.
int stopped_between_starts(int signal);
int free_port(bool any_interface);  // a port free now, on loopback or on every interface
void catch_launcher_signals();      // SIGINT/SIGTERM to the launcher: recorded, forwarded to ranks
int launcher_signal();              // the last such signal, 0 if none

}  // namespace slm::comm
