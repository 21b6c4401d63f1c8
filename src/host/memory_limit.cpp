// host/memory_limit.cpp: see memory_limit.h.
#include "host/memory_limit.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <vector>

#include "host/host_name.h"

namespace slm::host {

namespace {

namespace fs = std::filesystem;

// A limit file's value in bytes (0: none, absent or unreadable).
double limit_in(const fs::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    const double v = std::stod(text);
    return v > 0 && v < 0x1p60 ? v : 0;
  } catch (...) {
    return 0;
  }
}

// The memory controller's cgroups of this process (root, folder): v2's "0::/path" under
// /sys/fs/cgroup, v1's "N:...memory...:/path" under /sys/fs/cgroup/memory.
std::vector<std::pair<std::string, std::string>> memory_cgroups() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string root;
    if (line.rfind("0::", 0) == 0) root = "/sys/fs/cgroup";
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');)
      if (c == "memory") root = "/sys/fs/cgroup/memory";
    if (!root.empty()) out.emplace_back(root, root + path);
  }
  return out;
}

double meminfo_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  return in >> key >> kb && key == "MemTotal:" ? kb * 1024.0 : 0;
}

}  // namespace

std::pair<double, std::string> cgroup_memory_limit(const std::string& root, const std::string& dir) {
  const fs::path top = fs::path(root).lexically_normal(), start = fs::path(dir).lexically_normal();
  std::pair<double, std::string> best{0, ""};
  for (fs::path d = start;; d = d.parent_path()) {
    for (const char* name : {"memory.max", "memory.limit_in_bytes"})
      if (const double v = limit_in(d / name); v > 0 && (best.first == 0 || v < best.first)) best = {v, d.string()};
    if (d == top || d == d.parent_path() || d.string().size() <= top.string().size()) break;
  }
  return best;
}

MemoryLimit memory_limit() {
  const std::string host = host_name();
  MemoryLimit m{meminfo_total(), host, "this machine's memory"};
  for (const auto& [root, dir] : memory_cgroups()) {
    const auto [bytes, folder] = cgroup_memory_limit(root, dir);
    if (bytes > 0 && (m.bytes == 0 || bytes < m.bytes)) {
      m.bytes = bytes, m.pool = host + "|" + folder;
      m.from = fmt::format("the memory limit of cgroup {}", folder.substr(root.size()).empty() ? "/" : folder.substr(root.size()));
    }
  }
  return m;
}

}  // namespace slm::host
