// comm/launch.cpp: see launch.h.
#include "comm/launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <string_view>

#include "comm/launch_record.h"
#include "util/error.h"
#include "util/wait_time.h"

namespace slm::comm {
namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int out[2] = {-1, -1};     // read ends of the stdout / stderr pipes (-1 once closed)
  std::string pending[2];  // partial lines
  bool running = true;
  int code = 0;            // exit code, or 128 + signal
  std::string last_error;  // its last "slm: error: ..." line, for the cause of a failure
};

pid_t spawn(Child& c, const LaunchOptions& o, const std::string& addr, const std::string& port) {
  int pipes[2][2];
  if (::pipe(pipes[0]) != 0 || ::pipe(pipes[1]) != 0) throw UserError("launch: cannot create pipes");
  const pid_t launcher = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw UserError("launch: fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);  // the terminal's Ctrl-C reaches the launcher only; it forwards once
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher) ::_exit(1);  // the launcher died before prctl
    ::dup2(pipes[0][1], STDOUT_FILENO);
    ::dup2(pipes[1][1], STDERR_FILENO);
    for (auto& p : pipes) ::close(p[0]), ::close(p[1]);
    const int world = o.nproc * o.nnodes;
    ::setenv("RANK", std::to_string(c.rank).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(c.rank - o.node_rank * o.nproc).c_str(), 1);
    ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
    ::setenv("MASTER_ADDR", addr.c_str(), 1);
    ::setenv("MASTER_PORT", port.c_str(), 1);
    std::vector<char*> argv;
    const size_t local = static_cast<size_t>(c.rank - o.node_rank * o.nproc);
    if (local < o.prefix.size())
      for (const auto& a : o.prefix[local]) argv.push_back(const_cast<char*>(a.c_str()));
    for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "slm launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  for (int i = 0; i < 2; ++i) {
    ::close(pipes[i][1]);
    c.out[i] = pipes[i][0];
  }
  return pid;
}

// Copies complete lines from the child's pipe i to our stdout/stderr with the rank prefix.
void drain(Child& c, int i) {
  char buf[65536];
  ssize_t n = ::read(c.out[i], buf, sizeof buf);
  FILE* to = i == 0 ? stdout : stderr;
  if (n <= 0) {  // closed: flush a last unterminated line
    if (!c.pending[i].empty()) std::fprintf(to, "[%d] %s\n", c.rank, c.pending[i].c_str());
    c.pending[i].clear();
    ::close(c.out[i]);
    c.out[i] = -1;
    return;
  }
  c.pending[i].append(buf, static_cast<size_t>(n));
  size_t start = 0, nl;
  while ((nl = c.pending[i].find_first_of("\n\r", start)) != std::string::npos) {
    if (nl > start) std::fprintf(to, "[%d] %.*s\n", c.rank, static_cast<int>(nl - start), c.pending[i].data() + start);
    const std::string_view line(c.pending[i].data() + start, nl - start);
    if (const size_t e = line.find("slm: error: "); i == 1 && e != std::string_view::npos)
      c.last_error = std::string(line.substr(e + 12, line.find(": [", e) - (e + 12)));  // without Gloo's detail
    start = nl + 1;
  }
  c.pending[i].erase(0, start);
  std::fflush(to);
}

void signal_all(std::vector<Child>& cs, int sig) {
  for (auto& c : cs)
    if (c.running) ::kill(-c.pid, sig);
}

std::string describe_exit(const Child& c, int status) {
  if (!WIFEXITED(status)) return fmt::format("rank {} was killed by signal {}", c.rank, WTERMSIG(status));
  return c.last_error.empty() ? fmt::format("rank {} exited with code {}", c.rank, WEXITSTATUS(status))
                              : fmt::format("rank {} exited with code {}: {}", c.rank, WEXITSTATUS(status),
                                            c.last_error.substr(0, 200));
}

}  // namespace

int free_port(bool any_interface) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(any_interface ? INADDR_ANY : INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw UserError("launch: cannot find a free port; pass --master HOST:PORT");
  ::close(fd);
  return ntohs(a.sin_port);
}

void catch_launcher_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int launcher_signal() { return g_signal; }

// Forwards what the ranks wrote (waits up to 200 ms for any; 50 ms when none has an open pipe).
static void pump_output(std::vector<Child>& cs) {
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, int>> who;
  for (size_t k = 0; k < cs.size(); ++k)
    for (int i = 0; i < 2; ++i)
      if (cs[k].out[i] >= 0) fds.push_back({cs[k].out[i], POLLIN, 0}), who.push_back({k, i});
  if (!fds.empty() && ::poll(fds.data(), fds.size(), 200) > 0)
    for (size_t f = 0; f < fds.size(); ++f)
      if (fds[f].revents) drain(cs[who[f].first], who[f].second);
  if (fds.empty()) ::usleep(50000);
}

// The ranks that ended since the last call: their exit codes, each one's last words (its error
// line) forwarded before the cause is told. `failed`: the first failure of this round, where a rank
// killed by a signal is the likelier cause (its peers fail because it is gone); -1: none.
struct Reaped {
  int failed = -1, status = 0;
  bool any_running = false;
};
static Reaped reap(std::vector<Child>& cs) {
  Reaped r;
  for (auto& c : cs) {
    int status = 0;
    if (c.running && ::waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.running = false;
      c.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      for (pollfd p{c.out[1], POLLIN, 0}; c.out[1] >= 0 && ::poll(&p, 1, 0) > 0; p.fd = c.out[1])
        drain(c, 1);
      if (c.code != 0 && (r.failed < 0 || (WIFSIGNALED(status) && !WIFSIGNALED(r.status)))) {
        r.failed = static_cast<int>(&c - cs.data());
        r.status = status;
      }
    }
    r.any_running = r.any_running || c.running;
  }
  return r;
}

Outcome run_ranks(const LaunchOptions& o, const std::string& addr, const std::string& port, int restart,
                  const std::string& cause, const std::function<std::string()>& stop_check) {
  ::setenv("SLM_RESTART_COUNT", std::to_string(restart).c_str(), 1);  // inherited by the ranks
  ::setenv("SLM_RESTART_CAUSE", cause.c_str(), 1);
  std::vector<Child> cs(static_cast<size_t>(o.nproc));
  for (int i = 0; i < o.nproc; ++i) {
    cs[i].rank = o.node_rank * o.nproc + i;
    cs[i].pid = spawn(cs[i], o, addr, port);
  }
  using Clock = std::chrono::steady_clock;
  Outcome out;
  int forwarded = 0;
  bool failed = false;
  Clock::time_point kill_at = Clock::time_point::max();
  Clock::time_point next_check = Clock::now() + std::chrono::seconds(1);
  auto after_grace = [&] { return deadline_after(o.grace_s); };
  for (;;) {
    pump_output(cs);
    if (g_signal && forwarded != g_signal) {  // a signal to the launcher goes to every rank
      forwarded = g_signal;
      out.by_user = true;
      signal_all(cs, g_signal);
      kill_at = std::min(kill_at, after_grace());
    }
    const Reaped reaped = reap(cs);
    if (stop_check && !failed && !forwarded && Clock::now() >= next_check) {  // asked from elsewhere
      next_check = Clock::now() + std::chrono::seconds(1);
      std::string why = stop_check();
      if (!why.empty()) {
        failed = out.stopped = true;
        out.code = 1;
        out.cause = why;
        std::fprintf(stderr, "slm launch: %s; stopping the ranks of this machine\n", why.c_str());
        signal_all(cs, SIGTERM);
        kill_at = after_grace();
      }
    }
    if (reaped.failed >= 0 && !failed && !forwarded) {
      failed = true;
      out.code = WIFEXITED(reaped.status) ? WEXITSTATUS(reaped.status) : 128 + WTERMSIG(reaped.status);
      out.cause = describe_exit(cs[static_cast<size_t>(reaped.failed)], reaped.status);
      std::fprintf(stderr, "slm launch: %s; stopping the other ranks\n", out.cause.c_str());
      signal_all(cs, SIGTERM);
      kill_at = after_grace();
    }
    if (reaped.any_running && Clock::now() >= kill_at) {
      std::fprintf(stderr, "slm launch: ranks still running %.0f s after SIGTERM; killing them\n", o.grace_s);
      signal_all(cs, SIGKILL);
      kill_at = Clock::time_point::max();
    }
    bool open = false;
    for (auto& c : cs) open = open || c.out[0] >= 0 || c.out[1] >= 0;
    if (!reaped.any_running && !open) break;
  }
  if (!failed)
    for (auto& c : cs)
      if (c.code != 0 && out.code == 0) out.code = c.code;
  return out;
}

void check_rank_counts(const LaunchOptions& o) {
  if (o.nproc < 1 || o.nproc > kMaxLocalRanks)
    throw UserError(fmt::format("launch: -n {} must be from 1 to {} (ranks on this machine)", o.nproc, kMaxLocalRanks));
  if (o.nnodes < 1 || o.nnodes > kMaxNodes)
    throw UserError(fmt::format("launch: --nnodes {} must be from 1 to {}", o.nnodes, kMaxNodes));
  const rlim_t need = 2 * static_cast<rlim_t>(o.nproc) + 64;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= need) return;
  if (files.rlim_max == RLIM_INFINITY || files.rlim_max >= need) {
    files.rlim_cur = need;
    if (::setrlimit(RLIMIT_NOFILE, &files) == 0) return;
  }
  throw UserError(
      fmt::format("launch: -n {} needs {} open files (two pipes per rank); this shell allows {} "
                  "(raise `ulimit -n`)",
                  o.nproc, need, static_cast<unsigned long long>(files.rlim_cur)));
}

int launch(const LaunchOptions& o) {
  check_rank_counts(o);
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw UserError(fmt::format("launch: --node-rank {} must be in [0, --nnodes {})", o.node_rank, o.nnodes));
  if (o.command.empty()) throw UserError("launch: no command; usage: slm launch -n N -- slm train ...");
  if (o.max_restarts > 0 && o.nnodes > 1)
    throw UserError("launch: --max-restarts across machines needs an elastic job: --nnodes N:N (or MIN:MAX to "
                    "go on with fewer machines), every launcher with the same --master");
  std::string addr = "127.0.0.1", port;
  if (o.master.empty()) {
    if (o.nnodes > 1) throw UserError("launch: --nnodes > 1 needs --master HOST:PORT (rank 0's machine)");
  } else {
    size_t colon = o.master.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == o.master.size())
      throw UserError(fmt::format("launch: --master {} is not HOST:PORT", o.master));
    addr = o.master.substr(0, colon);
    port = o.master.substr(colon + 1);
  }
  catch_launcher_signals();
  const LaunchRecord record;  // restarts that fail before they resume, and giving up, in RUN/events.jsonl
  std::string cause;
  for (int restart = 0;; ++restart) {
    // A fresh store port for each start (the old one may linger in TIME_WAIT); --master keeps its own.
    const std::string p = o.master.empty() ? std::to_string(free_port(false)) : port;
    const Outcome r = run_ranks(o, addr, p, restart, cause, {});
    if (r.code == 0 || r.by_user || o.max_restarts == 0) return r.code;
    if (restart > 0) record.restart_failed(restart, cause, r.cause);
    if (const std::string why = not_restartable(r.code); !why.empty()) {
      std::fprintf(stderr, "slm launch: %s\n", why.c_str());
      return r.code;
    }
    if (restart >= o.max_restarts) {
      std::fprintf(stderr, "slm launch: giving up after %d restarts (last: %s)\n", o.max_restarts, r.cause.c_str());
      record.gave_up(o.max_restarts, r.cause);
      return r.code;
    }
    cause = r.cause;
    std::fprintf(stderr, "slm launch: restart %d of %d in %.0f s from the newest checkpoint (%s)\n", restart + 1,
                 o.max_restarts, o.restart_delay_s, cause.c_str());
    std::fflush(stderr);
    for (auto until = deadline_after(o.restart_delay_s); std::chrono::steady_clock::now() < until && !g_signal;)
      ::usleep(50000);
    if (g_signal) return stopped_between_starts(g_signal);
  }
}

std::string not_restartable(int code) {
  if (code == 1) return "not restarting after an input error (exit 1): it would fail the same way again";
  if (code == 2) return "not restarting after a usage error (exit 2)";
  return "";
}

int stopped_between_starts(int signal) {
  std::fprintf(stderr, "slm launch: stopped by signal %d before the restart\n", signal);
  return 128 + signal;
}

}  // namespace slm::comm
