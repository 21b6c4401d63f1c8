// host/cpu_share.h: whether a timing had the CPU to itself. A timing taken beside another job
// comes out slow, and the measurement caches (GEMM peak, precision probe) would hand that number
// to every later run; they keep only timings whose process had at least kAloneCpuShare of its
// threads' time. Time it lacked while the machine's CPUs sat idle counts as had: its threads were
// waiting on each other (a GEMM's imbalance on many cores, a serial stretch), not on another job.
// Several processes that time together (a profile's ranks on one machine) are judged as one: their
// CPU times summed over their threads, held to the machine's CPUs.
// Owns: CpuClock, cpu_clock, cpu_share, ranks_share, kAloneCpuShare, busy_note.
#pragma once
#include <string>

namespace slm::host {

struct CpuClock {
  double wall_s = 0;     // steady clock
  double process_s = 0;  // CPU time of this process, all its threads
  double idle_s = 0;     // idle + iowait of every CPU (/proc/stat; 0 where unreadable)
};
CpuClock cpu_clock();

// The share of `threads` threads' time the process had from `a` to `b` (1 where the CPUs sat idle
// for at least half of what it lacked). On 2 cores with one busy loop beside it: 0.53-0.66 (the
// bf16 GEMM peak 0.26 TFLOP/s); alone 0.98 (0.42).
double cpu_share(const CpuClock& a, const CpuClock& b, int threads);
// The same for processes on one machine that timed together from a to b (this process's clock,
// its process time not used): their CPU times summed (ranks_cpu_s) over all their threads, at most
// the machine's `cpus`. 4 ranks of one thread on 2 cores alone: 0.98; time the hypervisor took
// (steal) or another job had counts against them.
double ranks_share(const CpuClock& a, const CpuClock& b, double ranks_cpu_s, int threads, int cpus);
constexpr double kAloneCpuShare = 0.9;
// How a timing below that says so: " on a busy machine (60% of its threads' time)".
std::string busy_note(double share);

}  // namespace slm::host
