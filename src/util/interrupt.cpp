// util/interrupt.cpp: see interrupt.h.
#include "util/interrupt.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>

#include "util/error.h"

namespace slm {
namespace {
volatile std::sig_atomic_t g_signal = 0;
std::atomic<int64_t> g_first_ns{0};  // when the first signal came (CLOCK_MONOTONIC)
static_assert(std::atomic<int64_t>::is_always_lock_free, "the handler needs a lock-free clock reading");

// A signal within this long of the first is the same request delivered twice: `timeout` signals
// its command and then the command's process group, and a job scheduler may signal every process
// of a job as well as the one it started.
constexpr int64_t kRepeatNs = 1'000'000'000;

int64_t now_ns() {  // clock_gettime is async-signal-safe
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

extern "C" void on_signal(int sig) {
  const int64_t now = now_ns();
  if (g_signal != 0) {
    if (now - g_first_ns.load() < kRepeatNs) return;
    // a second signal: give up on orderly shutdown, and say so
    static const char msg[] = "slm: second interrupt: exiting at once, without saving\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);  // async-signal-safe
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  g_first_ns.store(now);
  g_signal = sig;
}
}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

bool interrupted() { return g_signal != 0; }
int interrupt_signal() { return g_signal; }

void throw_if_interrupted() {
  if (g_signal == SIGINT) throw UserError("interrupted (SIGINT); partial output removed");
  if (g_signal != 0) throw UserError("terminated (SIGTERM); partial output removed");
}

}  // namespace slm
