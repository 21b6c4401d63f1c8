// autoplan/comm_cpu.h: what moving bytes costs a rank's CPU, as `slm profile` measures it
// (RankProfile::comm_cpu_s_per_byte and machine_extra_cpu_s_per_byte, planner/profile.h). Owns
// CommCpuPerByte, comm_cpu_per_byte.
#pragma once
#include <vector>

#include "comm/world.h"

namespace slm::autoplan {

// CPU seconds per byte a rank moves: its own, and its share of its machine's beyond its ranks'.
struct CommCpuPerByte {
  double own = 0, machine_extra = 0;
};

// Per byte this process sends or receives in an all-reduce of every rank of g: its own CPU time
// (Gloo's threads and the kernel's socket copies: getrusage counts both; waiting costs none), and
// its share of what its machine spent beyond its ranks' own over the same time (the machine's busy
// CPU less theirs, split evenly between them; 0 where /proc/stat cannot be read): the kernel's
// forwarding and, on a testbed, the link emulator's copies of every packet that crosses sites,
// which no rank is charged for. machine[q]: rank q's machine. Collective over g.
CommCpuPerByte comm_cpu_per_byte(const comm::Group& g, const std::vector<int>& machine);

}  // namespace slm::autoplan
