// comm/elastic.cpp: see elastic.h. The launchers' store keys, all under "elastic/":
//   nproc               ranks per machine (the host's; the others must match)
//   round               the round now open or running
//   <r>/joined          counter: machines other than the host that joined round r (1, 2, ...)
//   <r>/cause, port, nodes   set by the host when it closes round r: why it started, the ranks'
//                       store port, how many machines run (the machines numbered below it)
//   <r>/waiting         counter: machines that came too late for round r (they want to grow it)
//   <r>/grow            set when the launchers stop round r to let them in
//   <r>/failed(_n)      the first failure's cause (and a counter, so that the first writer wins)
//   <r>/cause/<m>       machine m's failure, when its ranks failed on their own
//   <r>/user            set when a launcher of round r was stopped by its user: nobody restarts
//   <r>/ok              counter: machines whose ranks all finished
//   <r>/left            counter: machines waiting to join that saw the job finish
//   end                 the host gave up: its message
//   done                the job finished (machines waiting to join go home)
#include "comm/elastic.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fmt/format.h>

#include "comm/compat.h"
#include "comm/reach.h"
#include "util/error.h"
#include "util/wait_time.h"

namespace slm::comm {
namespace {

using Clock = std::chrono::steady_clock;

struct Rdzv {
  c10::intrusive_ptr<c10d::Store> store;
  std::string where;  // HOST:PORT, for messages
  bool done = false;  // this launcher saw the job finish while waiting to join

  static std::string key(int round, const char* what) { return fmt::format("elastic/{}/{}", round, what); }
  void set(const std::string& k, const std::string& v) { store->set(k, std::vector<uint8_t>(v.begin(), v.end())); }
  std::string get(const std::string& k) {
    const std::vector<uint8_t> v = store->get(k);
    return {v.begin(), v.end()};
  }
  bool has(const std::string& k) { return store->check({k}); }
  int64_t count(const std::string& k) { return store->add(k, 0); }
  // Machine idx's ranks failed in round r: its cause, and the first one stops the others.
  void fail_round(int r, int idx, const std::string& cause) {
    set(fmt::format("elastic/{}/cause/{}", r, idx), cause);
    if (store->add(key(r, "failed_n"), 1) == 1) set(key(r, "failed"), cause);
  }
  // The likeliest cause among the machines' (a rank killed by a signal, whose peers then fail,
  // before the first written).
  std::string round_failure(int r, int n) {
    std::string first = has(key(r, "failed")) ? get(key(r, "failed")) : "";
    for (int i = 0; i < n; ++i)
      if (const std::string k = fmt::format("elastic/{}/cause/{}", r, i); has(k))
        if (const std::string c = get(k); c.find("killed by signal") != std::string::npos) return c;
    return first;
  }
};

// Polls pred every 100 ms until it holds (true), the launcher is signalled or the time is up (false).
template <class Pred>
bool wait_until(Pred pred, double seconds) {
  const auto until = deadline_after(seconds);
  for (;;) {
    if (pred()) return true;
    if (launcher_signal() || Clock::now() >= until) return false;
    ::usleep(100000);
  }
}

Rdzv connect(const LaunchOptions& o, const std::string& addr, int port, bool host) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = host;
  so.waitWorkers = false;
  so.timeout = wait_ms(std::max(o.join_timeout_s, 1.0));
  const std::string where = fmt::format("{}:{}", addr, port);
  const auto not_answered = [&] {
    return UserError(fmt::format("launch: no launcher with --node-rank 0 answered at {} within {:.0f} s", where,
                                 o.join_timeout_s));
  };
  if (!host && !await_listener(addr, port, o.join_timeout_s)) throw not_answered();
  try {
    return {c10::make_intrusive<c10d::TCPStore>(addr, so), where};
  } catch (const std::exception&) {
    if (!host) throw not_answered();
    throw UserError(fmt::format("launch: cannot serve the launchers' rendezvous at {} (is the port in use?)", where));
  }
}

// The host closes round r: waits for MAX machines, or for MIN and rejoin_timeout; returns how many.
// The round's cause: why it started (a failure, a machine joining) and what became of the machines
// of the round before (prev of them).
int close_round(Rdzv& z, const LaunchOptions& o, int r, const std::string& cause, int prev) {
  const auto t0 = Clock::now();
  auto joined = [&] { return 1 + static_cast<int>(z.count(Rdzv::key(r, "joined"))); };
  auto waited = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  wait_until([&] { return joined() >= o.nnodes || (joined() >= o.min_nodes && waited() >= o.rejoin_timeout_s); },
             o.join_timeout_s);
  if (launcher_signal()) return 0;
  const int n = std::min(joined(), o.nnodes);
  if (n < o.min_nodes)
    throw UserError(fmt::format("launch: only {} of at least {} machines joined round {} within {:.0f} s", n,
                                o.min_nodes, r, o.join_timeout_s));
  std::string why = cause;
  if (r > 0 && n < prev)
    why += fmt::format("; {} of {} machines did not come back, going on with {}", prev - n, prev, n);
  else if (r > 0 && n > prev)
    why += fmt::format("; {} machines now, {} before", n, prev);
  z.set(Rdzv::key(r, "cause"), why);
  z.set(Rdzv::key(r, "port"), std::to_string(free_port(true)));
  z.set(Rdzv::key(r, "nodes"), std::to_string(n));
  return n;
}

// What a running round's launcher should stop for (asked once a second): "" = nothing.
std::string stop_reason(Rdzv& z, const LaunchOptions& o, int r, int n) {
  try {
    if (z.has(Rdzv::key(r, "failed"))) return "a rank of another machine failed (" + z.get(Rdzv::key(r, "failed")) + ")";
    if (z.has(Rdzv::key(r, "user"))) return "another machine's launcher was stopped";
    if (z.has(Rdzv::key(r, "grow"))) return "the job grows: saving a checkpoint first";
    if (n < o.nnodes && z.count(Rdzv::key(r, "waiting")) > 0) {
      z.set(Rdzv::key(r, "grow"), "1");
      return "a machine asks to join: saving a checkpoint, then growing the job";
    }
    return "";
  } catch (const std::exception&) {
    return "lost the launchers' rendezvous host";
  }
}

// Waits until the host opens a round after r and returns it; -1 after a signal to this launcher,
// when the host gave up (its message is printed) or when the job finished (z.done).
int next_round(Rdzv& z, int r) {
  if (!wait_until([&] { return std::stoi(z.get("elastic/round")) > r || z.has("elastic/end") || z.has("elastic/done"); },
                  1e9))
    return -1;
  if (z.has("elastic/done")) {
    std::fprintf(stderr, "slm launch: the job finished before this machine could join\n");
    z.done = true;
    z.store->add(Rdzv::key(r, "left"), 1);
    return -1;
  }
  if (z.has("elastic/end")) {
    std::fprintf(stderr, "slm launch: %s\n", z.get("elastic/end").c_str());
    return -1;
  }
  return std::stoi(z.get("elastic/round"));
}

struct Seat {
  int round = -1;    // -1: none (signalled, or the job ended)
  int machine = 0;   // this machine's number in the round
  int machines = 0;  // machines in the round
};

// A machine other than the host joins round r, or a later one when r is full (asking to grow it).
Seat take_seat(Rdzv& z, int r) {
  while (r >= 0) {
    const int idx = static_cast<int>(z.store->add(Rdzv::key(r, "joined"), 1));
    if (!wait_until([&] { return z.has(Rdzv::key(r, "nodes")) || z.has("elastic/end"); }, 1e9)) return {};
    if (z.has("elastic/end")) throw UserError(z.get("elastic/end"));
    const int n = std::stoi(z.get(Rdzv::key(r, "nodes")));
    if (idx < n) return {r, idx, n};
    std::fprintf(stderr, "slm launch: the job runs on %d machine%s; asking to join at its next round\n", n,
                 n == 1 ? "" : "s");
    z.store->add(Rdzv::key(r, "waiting"), 1);
    r = next_round(z, r);
  }
  return {};
}

// Runs this machine's ranks in round `seat`; returns their outcome.
Outcome run_round(Rdzv& z, const LaunchOptions& o, const std::string& addr, const Seat& seat) {
  const int r = seat.round, n = seat.machines;
  const std::string cause = z.get(Rdzv::key(r, "cause"));
  std::fprintf(stderr, "slm launch: round %d: machine %d of %d (%d rank%s)%s%s\n", r, seat.machine, n,
               n * o.nproc, n * o.nproc == 1 ? "" : "s", cause.empty() ? "" : ": ", cause.c_str());
  std::fflush(stderr);
  LaunchOptions ro = o;
  ro.nnodes = n;
  ro.node_rank = seat.machine;
  return run_ranks(ro, o.rank_addr.empty() ? addr : o.rank_addr, z.get(Rdzv::key(r, "port")), r, cause,
                   [&] { return stop_reason(z, o, r, n); });
}

// After a round that did not finish: whether the job was stopped by a user (this launcher's or,
// when the ranks ended by a signal nobody else explains, another machine's); records this
// machine's failure when its ranks failed on their own.
bool stopped_by_user(Rdzv& z, int r, int idx, const Outcome& out) {
  if (out.by_user) {
    z.set(Rdzv::key(r, "user"), "1");
    return true;
  }
  // Ranks that ended by a signal this launcher did not send were stopped from elsewhere: a grow, a
  // failure, or another machine's user (the ranks agree to stop together); give its key a moment.
  const bool signalled = !out.stopped && (out.code == 130 || out.code == 143);
  auto explained = [&] {
    return z.has(Rdzv::key(r, "user")) || z.has(Rdzv::key(r, "grow")) || z.has(Rdzv::key(r, "failed"));
  };
  if (signalled) wait_until(explained, 5);
  if (z.has(Rdzv::key(r, "user")) || (signalled && !explained())) {
    z.set(Rdzv::key(r, "user"), "1");
    return true;
  }
  if (!z.has(Rdzv::key(r, "grow")) && !out.stopped) z.fail_round(r, idx, out.cause);
  return false;
}

int run_elastic(Rdzv& z, const LaunchOptions& o, const std::string& addr, bool host) {
  if (host) {
    z.set("elastic/nproc", std::to_string(o.nproc));
    z.set("elastic/round", "0");
  } else if (const std::string np = z.get("elastic/nproc"); np != std::to_string(o.nproc)) {
    throw UserError(fmt::format("launch: this machine runs {} ranks (-n) but the job's others run {}", o.nproc, np));
  }
  int failures = 0;   // rounds that failed (host)
  std::string cause;  // why the next round starts (host)
  Seat seat{host ? 0 : std::stoi(z.get("elastic/round")), 0, 0};
  for (;;) {
    if (host) {
      seat.machines = close_round(z, o, seat.round, cause, seat.machines);
      if (seat.machines == 0) return 128 + launcher_signal();
    } else if (seat = take_seat(z, seat.round); seat.round < 0) {
      return launcher_signal() ? 128 + launcher_signal() : z.done ? 0 : 1;
    }
    const int r = seat.round, n = seat.machines;
    const Outcome out = run_round(z, o, addr, seat);
    if (out.code == 0 && !out.stopped) {
      z.store->add(Rdzv::key(r, "ok"), 1);
      if (host) {  // the store stays up until every machine, and every one waiting to join, is done with it
        z.set("elastic/done", "1");
        wait_until([&] { return z.count(Rdzv::key(r, "ok")) >= n && z.count(Rdzv::key(r, "left")) >= z.count(Rdzv::key(r, "waiting")); },
                   60);
      }
      return 0;
    }
    if (stopped_by_user(z, r, seat.machine, out)) return out.code;
    if (const std::string why = not_restartable(out.code); !why.empty() && !out.stopped) {
      std::fprintf(stderr, "slm launch: %s\n", why.c_str());
      return out.code;
    }
    if (!host) {  // the host decides whether there is a next round
      std::fprintf(stderr, "slm launch: waiting for the next round\n");
      if ((seat.round = next_round(z, r)) < 0) return out.code;
      continue;
    }
    const bool grow = z.has(Rdzv::key(r, "grow"));
    // The failing machines' causes (their launchers write them as their ranks end).
    if (!grow) wait_until([&] { return z.count(Rdzv::key(r, "failed_n")) >= n; }, 1.5);
    cause = grow ? std::string("a machine asked to join") : z.round_failure(r, n);
    if (cause.empty()) cause = out.cause;
    if (!grow && ++failures > o.max_restarts) {
      const std::string msg = fmt::format("giving up after {} restarts (last: {})", o.max_restarts, cause);
      z.set("elastic/end", msg);
      std::fprintf(stderr, "slm launch: %s\n", msg.c_str());
      wait_until([] { return false; }, 2);  // let the others read it
      return out.code;
    }
    if (!grow)
      std::fprintf(stderr, "slm launch: restart %d of %d in %.0f s from the newest checkpoint (%s)\n", failures,
                   o.max_restarts, o.restart_delay_s, cause.c_str());
    std::fflush(stderr);
    wait_until([] { return false; }, grow ? 0 : o.restart_delay_s);
    if (launcher_signal()) return stopped_between_starts(launcher_signal());
    z.set("elastic/round", std::to_string(++seat.round));
  }
}

}  // namespace

int launch_elastic(const LaunchOptions& o) {
  check_rank_counts(o);
  if (o.min_nodes < 1 || o.min_nodes > o.nnodes)
    throw UserError(fmt::format("launch: --nnodes {}:{} needs 1 <= MIN <= MAX", o.min_nodes, o.nnodes));
  const size_t colon = o.master.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == o.master.size())
    throw UserError("launch: --nnodes MIN:MAX needs --master HOST:PORT (where the launcher with --node-rank 0 "
                    "serves the launchers' rendezvous)");
  const std::string addr = o.master.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(o.master.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (port < 1 || port > 65535) throw UserError(fmt::format("launch: --master {} is not HOST:PORT", o.master));
  const bool host = o.node_rank == 0;
  catch_launcher_signals();
  Rdzv z = connect(o, addr, port, host);
  try {
    return run_elastic(z, o, addr, host);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception&) {
    throw UserError(fmt::format("launch: lost the launchers' rendezvous host at {} (the launcher with "
                                "--node-rank 0); the job cannot go on without it",
                                z.where));
  }
}

}  // namespace slm::comm
