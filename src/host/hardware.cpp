// host/hardware.cpp: see hardware.h.
#include "host/hardware.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef SLM_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "host/cpu_share.h"
#include "host/cuda_info.h"
#include "host/rng_state.h"
#include "host/runtime.h"

#include "util/measure_cache.h"

namespace slm::host {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

int64_t next_gemm_size(int64_t n, double seconds, int64_t max_n) {
  constexpr double kMaxMatmulS = 0.25;  // the next size does 8x the work
  return n < max_n && 8 * seconds <= kMaxMatmulS ? 2 * n : 0;
}

bool more_gemm_repeats(int done, double elapsed_s) {
  constexpr double kWindowS = 2.0;
  return done < 5 || (elapsed_s < kWindowS && done < 1000);
}

// One matmul of a and b, in seconds (the device synchronised around it).
static double time_matmul(const at::Tensor& a, const at::Tensor& b) {
  const bool cuda = a.is_cuda();
  if (cuda) torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor c = at::matmul(a, b);
  if (cuda) torch::cuda::synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The best of n x n matmuls repeated for ~2 s (more_gemm_repeats) in the run's precision on the
// device, at the largest n up to 2048 (CPU) or 8192 (GPU) whose matmul takes at most ~0.25 s: a
// slow path (bf16 on a CPU without bf16 instructions: ATen's reference GEMM, ~1 GFLOP/s) is timed
// in seconds, not in minutes. On a CPU, with the share of its threads' time the process had while
// the best-of ran (cpu_share).
static PeakTiming measure_gemm_flops(const std::string& device, const std::string& precision) {
  const int64_t max_n = device == "cpu" ? 2048 : 8192;
  const auto opts = torch::TensorOptions().device(device).dtype(precision == "bf16" ? torch::kBFloat16 : torch::kFloat);
  int64_t n = 256;
  at::Tensor a, b;
  const KeepRng keep{c10::Device(device)};  // its random inputs leave the run's generators as they were
  for (;;) {
    a = torch::randn({n, n}, opts);
    b = torch::randn({n, n}, opts);
    time_matmul(a, b);  // warm-up
    const int64_t next = next_gemm_size(n, time_matmul(a, b), max_n);
    if (next == 0) break;
    n = next;
  }
  PeakTiming m;
  const CpuClock before = cpu_clock();
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (int done = 0; more_gemm_repeats(done, elapsed()); ++done)
    m.flops = std::max(m.flops, 2.0 * n * n * n / time_matmul(a, b));
  if (device == "cpu") m.cpu_share = cpu_share(before, cpu_clock(), at::get_num_threads());
  return m;
}

PeakChoice choose_peak(std::optional<double> cached, const PeakTiming& now) {
  const bool busy = now.cpu_share < kAloneCpuShare;
  const std::string note = busy ? busy_note(now.cpu_share) : "";
  if (cached && *cached >= now.flops)
    return {*cached, fmt::format("cached; {:.3f} measured now{}", now.flops / 1e12, note), false};
  if (busy) return {now.flops, "measured now" + note + ": not cached", false};
  return {now.flops, cached ? fmt::format("measured now; the cached {:.3f} was lower", *cached / 1e12) : "measured now",
          true};
}

// Assumed on-demand prices, USD per device-hour (public cloud list prices, rounded; 2026).
// A run can set cost.price_per_hour instead.
static double assumed_price(const std::string& device, int threads, std::string* source) {
  if (device == "cpu") {
    *source = fmt::format("assumed: $0.04 per vCPU-hour x {} threads", threads);
    return 0.04 * threads;
  }
  *source = "assumed: $2.50 per GPU-hour (set cost.price_per_hour for your GPU)";
  return 2.5;
}

DeviceInfo describe_device(const std::string& device, const std::string& precision, int threads,
                           double peak_tflops, double price_per_hour, PeakCache mode) {
  DeviceInfo d;
  const CudaInfo gpu = device == "cpu" ? CudaInfo{} : cuda_info();
  d.name = device == "cpu" ? fmt::format("{} x{} threads", cpu_model_name(), threads) : gpu.ok ? gpu.name : "cuda:0";
  if (price_per_hour > 0) {
    d.price_per_hour = price_per_hour;
    d.price_source = "configured";
  } else {
    d.price_per_hour = assumed_price(device, threads, &d.price_source);
  }
  if (peak_tflops > 0) {
    d.peak_flops = peak_tflops * 1e12;
    d.peak_source = "configured";
    return d;
  }
  // " | measured alone": entries cached before busy timings were kept out (possibly low) are not read
  const std::string key = d.name + " " + precision + " | " + measurement_context() + " | measured alone";
  const std::optional<nlohmann::json> c = cached_measurement("peak.json", key);
  const std::optional<double> cached = c && c->is_number() ? std::optional<double>(c->get<double>()) : std::nullopt;
  if (cached && mode == PeakCache::kUse) {
    d.peak_flops = *cached;
    d.peak_source = "cached";
    return d;
  }
  const PeakChoice p = choose_peak(cached, measure_gemm_flops(device, precision));
  d.peak_flops = p.flops;
  d.peak_source = p.source;
  if (p.store) store_measurement("peak.json", key, p.flops);
  return d;
}

int64_t gpu_peak_memory_bytes() {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (!torch::cuda::is_available()) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return stats.allocated_bytes[0].peak;  // [0]: every pool together (StatType::AGGREGATE)
#else
  return 0;
#endif
}

int64_t peak_memory_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

int64_t resident_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

}  // namespace slm::host
