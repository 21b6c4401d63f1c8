// autoplan/cpu_quota.h: the CPU quota that limits this process, as `slm profile` reads it: a
// testbed site's (SLM_CPU_MAX, testbed/cgroup.h), else its cgroup's (v2 cpu.max, v1 cfs). Owns
// cpu_quota, cpu_quota_s, quota_period_s, alone_cores.
#pragma once
#include <string>
#include <utility>

namespace slm::autoplan {

// This process's CPU quotas, as one string (part of the profile cache's key).
std::string cpu_quota();
// {quota, period} in seconds ({0, 0} without one).
std::pair<double, double> cpu_quota_s();
// The period of that quota (0 without one): within a period a quota-limited rank runs at full
// speed until its quota is spent, then not at all, so a timing shorter than a period can miss the
// limit altogether (the testbed's 0.5-core site timed its blocks at b = 1 only 2x slower than the
// free site, where whole steps ran ~4x slower).
double quota_period_s();
// The cores one rank has when it runs alone: 1, or the quota where it allows less (a testbed site
// of cpus = 0.5). The solo speed-up is relative to this, so a pool's cores are ranks / speed-up x it.
double alone_cores();

}  // namespace slm::autoplan
