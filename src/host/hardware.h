// host/hardware.h: what the device can do and what it costs, for MFU and Token/$ metrics.
// Owns: DeviceInfo and describe_device: the device's name, its peak FLOP/s for the run's
// precision (measured once by a GEMM as large as a quarter second allows, and cached in
// ~/.cache/slmtrain/peak.json, keyed by device name, precision and threads), and its price per
// hour (from the config, else a small table of assumed on-demand prices, stated in the log), plus
// cpu_model_name, peak_memory_bytes and resident_memory_bytes.
#pragma once
#include <cstdint>
#include <string>

namespace slm::host {

struct DeviceInfo {
  std::string name;              // CPU model (with thread count) or "cuda:<n>"
  double peak_flops = 0;         // per device, for the run's precision
  std::string peak_source;       // "measured now" | "cached" | "configured"
  double price_per_hour = 0;     // USD per device-hour
  std::string price_source;      // "configured" | "assumed: ..."
};

DeviceInfo describe_device(const std::string& device, const std::string& precision, int threads,
                           double configured_peak_tflops, double configured_price_per_hour);

// The size the GEMM peak is timed at: from n = 256, the next size (2n) while its matmul, 8x the
// work, would take at most ~0.25 s by this one's `seconds`, up to max_n; 0 = time this n.
int64_t next_gemm_size(int64_t n, double seconds, int64_t max_n);

// The CPU's model name (/proc/cpuinfo), e.g. "AMD EPYC 9654 96-Core Processor".
std::string cpu_model_name();

// Peak resident memory of this process (CPU), in bytes.
int64_t peak_memory_bytes();
// The most GPU memory this process's tensors held at once on its current CUDA device (LibTorch's
// caching allocator's peak of allocated bytes, as torch.cuda.max_memory_allocated); 0 without a
// GPU or in a build without the CUDA headers (SLM_HAVE_CUDA_KERNELS).
int64_t gpu_peak_memory_bytes();
// Resident memory of this process now (CPU), in bytes.
int64_t resident_memory_bytes();

}  // namespace slm::host
