// host/runtime.cpp: see runtime.h.
#include "host/runtime.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <torch/torch.h>
#include <torch/version.h>

#include "host/blas_info.h"
#include "model/kernel_threads.h"
#include "util/torch_compat.h"

namespace slm::host {

// The variables of runtime.h's 1. that change how fast LibTorch computes, in the order set.
static const char* const kSpeedVariables[] = {"OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};

bool runs_compute(const std::string& command) {
  // Tokenizers, datasets and reports never run a LibTorch operator; every other command may
  // (`profile`, `doctor` and `plan` time them for the planner: they must run as `train` does).
  return !command.empty() && command[0] != '-' && command != "tokenizer" && command != "data" && command != "report";
}

void reexec_with_blas_env(int argc, char** argv) {
  if (std::getenv("SLM_NO_REEXEC")) return;
  bool changed = false;
  auto set_default = [&](const char* name, const char* value) {
    if (std::getenv(name)) return;
    ::setenv(name, value, 1);
    changed = true;
  };
  if (__builtin_cpu_supports("avx512f")) set_default(kSpeedVariables[0], "SkylakeX");
  set_default(kSpeedVariables[1], "PASSIVE");
  // ... but a worker spins briefly before it sleeps: ATen opens a parallel region per operator,
  // and waking sleeping workers for each cost 15-20% of a step (fp32 and bf16, both LibTorch
  // builds; docs/benchmarks.md). 10,000 spins bound the CPU a waiting worker burns (~0.5 ms).
  set_default(kSpeedVariables[2], "10000");
  // c10d/Gloo log their own copy of errors we report in one line (glog in 1.13; 2.x: see
  // compat::quiet_torch_logging).
  set_default("GLOG_minloglevel", "3");
  if (changed) ::execv("/proc/self/exe", argv);  // on failure carry on with the defaults
  (void)argc;
}

std::string runtime_settings() {
  std::string out;
  for (const char* name : kSpeedVariables) {
    const char* v = std::getenv(name);
    if (!out.empty()) out += ' ';
    out.append(name).append("=").append(v ? v : "unset");
  }
  return out;
}

std::string measurement_context() {
  return runtime_settings() + " | LibTorch " + TORCH_VERSION + ", BLAS " + blas_info().kind + ", slm kernels r" +
         std::to_string(model::kKernelsRevision);
}

void configure_process() {
  compat::quiet_torch_logging();
  if (__builtin_cpu_supports("avx512f")) ::setenv("ATEN_CPU_CAPABILITY", "avx512", 0);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void release_free_memory() { malloc_trim(0); }

void configure_cpu_threads(int threads, int local_ranks) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int n = threads > 0 ? threads : std::max(1, cores / std::max(1, local_ranks));
  torch::set_num_threads(n);
}

int cpu_threads() { return torch::get_num_threads(); }

}  // namespace slm::host
