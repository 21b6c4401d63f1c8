// host/memory_limit.h: how much memory this machine gives its ranks: MemTotal, or a cgroup's limit
// where that is lower (a container's, a Slurm job's), and what shares it (the host, and that
// cgroup). The check before training sums a machine's CPU ranks against it (autoplan/memory_caps.h):
// a run whose estimate cannot fit says so in one line instead of being killed by the kernel.
// Owns: MemoryLimit, memory_limit, cgroup_memory_limit.
#pragma once
#include <string>
#include <utility>

namespace slm::host {

struct MemoryLimit {
  double bytes = 0;  // 0: unknown
  std::string pool;  // what shares it: the host name, and the limiting cgroup's folder if any
  std::string from;  // in words, e.g. "this machine's memory" or "the memory limit of cgroup /slurm/job_7"
};
MemoryLimit memory_limit();

// The lowest memory limit from cgroup folder `dir` up to `root` (v2's memory.max, v1's
// memory.limit_in_bytes; "max" and values of 2^60 bytes or more mean none) and the folder that
// sets it; {0, ""} where none does.
std::pair<double, std::string> cgroup_memory_limit(const std::string& root, const std::string& dir);

}  // namespace slm::host
