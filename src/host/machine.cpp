// host/machine.cpp: see machine.h.
#include "host/machine.h"

#include <dlfcn.h>
#include <sched.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <torch/cuda.h>
#include <torch/version.h>

#include "host/hardware.h"

namespace slm::host {

namespace {

// The flags of the first processor in /proc/cpuinfo.
std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) flags.insert(w);
      break;
    }
  return flags;
}

// A /proc/meminfo field in bytes (0 when absent).
double meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) * 1024.0;  // "...  kB"
  return 0;
}

}  // namespace

CpuCount cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  CpuCount c{CPU_COUNT(&set), 0};
  std::set<std::pair<std::string, std::string>> cores;  // (package, core)
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/topology/", cpu);
    std::ifstream package(dir + "physical_package_id"), core(dir + "core_id");
    std::string p, k;
    if (!(package >> p) || !(core >> k)) return {c.logical, c.logical};
    cores.insert({p, k});
  }
  c.physical = static_cast<int>(cores.size());
  return c;
}

MachineFacts machine_facts() {
  MachineFacts m;
  m.cpu = cpu_model_name();
  m.cores = cpu_count().logical;
  const std::set<std::string> flags = cpu_flags();
  for (const char* f : {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    (flags.count(f) ? m.cpu_features : m.cpu_missing).push_back(f);
  m.memory_bytes = meminfo_bytes("MemTotal");
  m.memory_available_bytes = meminfo_bytes("MemAvailable");
  m.torch_version = TORCH_VERSION;
  m.torch_cuda = ::dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD) != nullptr;  // linked in: loaded already
#ifdef USE_C10D_NCCL
  m.torch_nccl = true;
#endif
  m.blas = blas_info();
  m.gpu = cuda_info();
  m.gpus = m.torch_cuda && m.gpu.ok ? static_cast<int>(torch::cuda::device_count()) : 0;
  return m;
}

std::string describe_cpu(const MachineFacts& m) {
  auto join = [](const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, " ")); };
  std::string isa = join(m.cpu_features);
  if (!m.cpu_missing.empty()) isa += (isa.empty() ? "no " : "; no ") + join(m.cpu_missing);
  return fmt::format("{}, {} cores ({})", m.cpu, m.cores, isa);
}

std::string describe_machine(const MachineFacts& m) {
  const std::string gpus = m.gpus > 0 ? fmt::format(", {} x {}", m.gpus, m.gpu.name) : "";
  return fmt::format("{}, {:.1f} GiB, LibTorch {} {}, BLAS {}{}", describe_cpu(m), m.memory_bytes / (1 << 30),
                     m.torch_version, m.torch_cuda ? (m.torch_nccl ? "with CUDA and NCCL" : "with CUDA") : "CPU-only",
                     m.blas.kind, gpus);
}

}  // namespace slm::host
