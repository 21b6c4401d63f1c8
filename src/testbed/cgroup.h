// testbed/cgroup.h: a slower site, emulated by capping the CPU time of its ranks with the kernel's
// cgroup cpu controller (v1: cpu.cfs_quota_us; v2: cpu.max). Owns: make_site_cgroup,
// remove_site_cgroups, cgroup_prefix. A site with `cpus = 0.5` gets half a core for all its ranks
// together, e.g. a site of older GPUs next to newer ones.
#pragma once
#include <string>
#include <vector>

namespace slm::testbed {

// The directory of cgroup `name` under the cpu controller. UserError when none is mounted.
std::string cgroup_dir(const std::string& name);
// Creates (or resets) the cgroup `name` with a quota of `cpus` cores; returns its directory.
// UserError when no writable cgroup cpu controller is mounted.
std::string make_site_cgroup(const std::string& name, double cpus);
// Removes every cgroup whose name starts with `prefix` (their processes must have ended).
void remove_site_cgroups(const std::string& prefix);
// A command prefix that moves the process into cgroup `dir`, then runs the rest of the command.
std::vector<std::string> cgroup_prefix(const std::string& dir);

}  // namespace slm::testbed
