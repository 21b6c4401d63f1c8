// autoplan/comm_cpu.cpp: see comm_cpu.h.
#include "autoplan/comm_cpu.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <torch/torch.h>

#include "comm/collectives.h"

namespace slm::autoplan {

namespace {

// Busy CPU seconds of the whole machine so far (/proc/stat: every process, the kernel's
// interrupts and softirqs; on a testbed the link emulator too), or -1 where it cannot be read.
double machine_busy_s() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu") return -1;
  return (user + nice + system + irq + softirq) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

CommCpuPerByte comm_cpu_per_byte(const comm::Group& g, const std::vector<int>& machine) {
  if (g.size < 2) return {};
  const int64_t n = 1 << 20;  // 4 MB of fp32
  at::Tensor t = torch::ones({n});
  comm::all_reduce_sum(t, g);  // connections warm
  auto cpu_s = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  const int reps = 6;  // /proc/stat counts in ticks (10 ms): a window of several tenths of a second
  comm::barrier(g);
  const double before = cpu_s(), machine_before = machine_busy_s();
  for (int i = 0; i < reps; ++i) comm::all_reduce_sum(t, g);
  const double used = cpu_s() - before, machine_used = machine_busy_s() - machine_before;
  const double moved = reps * 2 * 2.0 * (g.size - 1) / g.size * static_cast<double>(n) * 4;  // sent + received
  // The ranks of this machine: their own CPU summed.
  std::vector<double> own(static_cast<size_t>(g.size), 0.0);
  own[static_cast<size_t>(g.rank)] = used;
  own = comm::sum(own, g);
  double ours = 0;
  int here = 0;
  for (int q = 0; q < g.size; ++q)
    if (machine[static_cast<size_t>(q)] == machine[static_cast<size_t>(g.rank)]) ours += own[static_cast<size_t>(q)], ++here;
  const double extra = machine_before < 0 ? 0.0 : std::max(0.0, machine_used - ours) / here;
  return {std::max(0.0, used / moved), extra / moved};
}

}  // namespace slm::autoplan
