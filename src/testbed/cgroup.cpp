// testbed/cgroup.cpp: see cgroup.h.
#include "testbed/cgroup.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <thread>

#include "util/error.h"
#include "util/files.h"

namespace slm::testbed {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kPeriodUs = 100000;

// The cpu controller's hierarchy: v1 (/sys/fs/cgroup/cpu) or v2 with cpu enabled; "" if none.
std::string cpu_root(bool* v2) {
  *v2 = false;
  for (const char* d : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
    if (path_exists(std::string(d) + "/cpu.cfs_quota_us")) return d;
  const std::string controllers = "/sys/fs/cgroup/cgroup.controllers";
  if (path_exists(controllers) && read_file(controllers).find("cpu") != std::string::npos) {
    *v2 = true;
    return "/sys/fs/cgroup";
  }
  return "";
}

void write_value(const std::string& file, const std::string& value) {
  std::ofstream f(file);
  f << value << std::flush;
  if (!f) throw UserError(fmt::format("testbed: cannot write {} (a site's cpus needs a writable cgroup cpu controller)", file));
}

}  // namespace

std::string cgroup_dir(const std::string& name) {
  bool v2 = false;
  const std::string root = cpu_root(&v2);
  if (root.empty()) throw UserError("testbed: a site's cpus needs the cgroup cpu controller, and none is mounted");
  return root + "/" + name;
}

std::string make_site_cgroup(const std::string& name, double cpus) {
  bool v2 = false;
  const std::string root = cpu_root(&v2), dir = cgroup_dir(name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("testbed: cannot create cgroup {}: {}", dir, ec.message()));
  const int64_t quota = std::max<int64_t>(1000, std::llround(cpus * kPeriodUs));
  if (v2) {
    write_value(root + "/cgroup.subtree_control", "+cpu");
    write_value(dir + "/cpu.max", fmt::format("{} {}", quota, kPeriodUs));
  } else {
    write_value(dir + "/cpu.cfs_period_us", std::to_string(kPeriodUs));
    write_value(dir + "/cpu.cfs_quota_us", std::to_string(quota));
  }
  return dir;
}

void remove_site_cgroups(const std::string& prefix) {
  bool v2 = false;
  const std::string root = cpu_root(&v2);
  if (root.empty() || !path_exists(root)) return;
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory() || e.path().filename().string().rfind(prefix, 0) != 0) continue;
    // rmdir fails while a killed process is still being reaped: retry for a moment.
    for (int i = 0; i < 50 && ::rmdir(e.path().c_str()) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> cgroup_prefix(const std::string& dir) {
  // SLM_CGROUP tells the rank where it runs (a cgroup namespace may show it "/") and SLM_CPU_MAX
  // its quota as cpu.max says it ("quota period" in µs; the rank's network namespace remounts /sys,
  // where it could not read it): the compute profile keys its cache on both and times in whole
  // periods (autoplan/profile.cpp).
  return {"sh", "-c",
          fmt::format("echo $$ > {0}/cgroup.procs && SLM_CGROUP={0} SLM_CPU_MAX=\"$(cat {0}/cpu.max 2>/dev/null || "
                      "echo $(cat {0}/cpu.cfs_quota_us) $(cat {0}/cpu.cfs_period_us))\" exec \"$@\"",
                      dir),
          "slm-cgroup"};
}

}  // namespace slm::testbed
