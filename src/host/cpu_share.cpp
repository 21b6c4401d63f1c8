// host/cpu_share.cpp: see cpu_share.h.
#include "host/cpu_share.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <fmt/format.h>
#include <string>

namespace slm::host {

CpuClock cpu_clock() {
  CpuClock c;
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  c.process_s = static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0;
  if (in >> cpu >> user >> nice >> system >> idle >> iowait && cpu == "cpu")
    c.idle_s = (idle + iowait) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return c;
}

double cpu_share(const CpuClock& a, const CpuClock& b, int threads) {
  const double span = (b.wall_s - a.wall_s) * std::max(1, threads), had = b.process_s - a.process_s;
  if (span <= 0) return 1.0;
  return b.idle_s - a.idle_s >= 0.5 * (span - had) ? 1.0 : had / span;
}

double ranks_share(const CpuClock& a, const CpuClock& b, double ranks_cpu_s, int threads, int cpus) {
  const CpuClock all{b.wall_s, a.process_s + ranks_cpu_s, b.idle_s};
  return cpu_share(a, all, std::min(threads, std::max(1, cpus)));
}

std::string busy_note(double share) {
  return fmt::format(" on a busy machine ({:.0f}% of its threads' time)", 100 * share);
}

}  // namespace slm::host
