// autoplan/cpu_quota.cpp: see cpu_quota.h.
#include "autoplan/cpu_quota.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace slm::autoplan {

namespace {

// The cgroup folders whose CPU quota applies to this process: a testbed site's ranks share one
// (testbed/cgroup.h, which also names it in SLM_CGROUP: inside a cgroup namespace
// /proc/self/cgroup may say "/"), then those /proc/self/cgroup names (v2, v1).
std::vector<std::string> cgroup_dirs() {
  std::vector<std::string> dirs;
  if (const char* dir = std::getenv("SLM_CGROUP")) dirs.push_back(dir);
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string path = line.substr(colon + 1);
    for (const std::string& d : {"/sys/fs/cgroup" + path, "/sys/fs/cgroup/cpu" + path, "/sys/fs/cgroup/cpu,cpuacct" + path})
      dirs.push_back(d);
  }
  return dirs;
}

std::string first_line(const std::string& file) {
  std::ifstream q(file);
  std::string v;
  return q && std::getline(q, v) ? v : "";
}

}  // namespace

std::string cpu_quota() {
  std::string out = std::getenv("SLM_CPU_MAX") ? std::string("testbed=") + std::getenv("SLM_CPU_MAX") + ";" : "";
  for (const std::string& d : cgroup_dirs())
    for (const std::string& f : {d + "/cpu.max", d + "/cpu.cfs_quota_us"})
      if (const std::string v = first_line(f); !v.empty()) out += f + "=" + v + ";";
  return out;
}

std::pair<double, double> cpu_quota_s() {
  auto cpu_max = [](const std::string& line) -> std::pair<double, double> {  // "QUOTA PERIOD" in µs, or "max ..."
    std::istringstream v(line);
    std::string quota;
    double period = 0;
    if (v >> quota >> period && quota != "max" && quota[0] != '-' && period > 0)
      return {std::strtod(quota.c_str(), nullptr) / 1e6, period / 1e6};
    return {0, 0};
  };
  if (const char* testbed = std::getenv("SLM_CPU_MAX"))
    if (const auto q = cpu_max(testbed); q.second > 0) return q;
  for (const std::string& d : cgroup_dirs()) {
    if (const auto q = cpu_max(first_line(d + "/cpu.max")); q.second > 0) return q;
    std::istringstream v1(first_line(d + "/cpu.cfs_quota_us") + " " + first_line(d + "/cpu.cfs_period_us"));
    double q1 = 0, p1 = 0;
    if (v1 >> q1 >> p1 && q1 > 0 && p1 > 0) return {q1 / 1e6, p1 / 1e6};
  }
  return {0, 0};
}

double quota_period_s() { return cpu_quota_s().second; }

double alone_cores() {
  const auto [quota, period] = cpu_quota_s();
  return quota > 0 && period > 0 ? std::min(1.0, quota / period) : 1.0;
}

}  // namespace slm::autoplan
