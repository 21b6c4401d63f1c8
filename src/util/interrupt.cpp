// util/interrupt.cpp: see interrupt.h.
#include "util/interrupt.h"

#include <unistd.h>

#include <csignal>

#include "util/error.h"

namespace slm {
namespace {
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
  if (g_signal != 0) {  // second signal: give up on orderly shutdown, and say so
    static const char msg[] = "slm: second interrupt: exiting at once, without saving\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);  // async-signal-safe
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
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
