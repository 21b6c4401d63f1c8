// host/hardware.h: what the device can do and what it costs, for MFU and Token/$ metrics.
// Owns: DeviceInfo and describe_device: the device's name, its peak FLOP/s for the run's
// precision (measured once by GEMMs as large as a quarter second allows, the best over ~2 s, and cached in
// ~/.cache/slmtrain/peak.json, keyed by device name, precision and threads, unless the process
// did not have its threads' time: choose_peak), and its price per
// hour (from the config, else a small table of assumed on-demand prices, stated in the log), plus
// cpu_model_name, peak_memory_bytes and resident_memory_bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace slm::host {

struct DeviceInfo {
  std::string name;              // CPU model (with thread count) or "cuda:<n>"
  double peak_flops = 0;         // per device, for the run's precision
  std::string peak_source;       // "measured now" | "cached" | "configured" (+ what choose_peak saw)
  double price_per_hour = 0;     // USD per device-hour
  std::string price_source;      // "configured" | "assumed: ..."
};

// kUse: the cached peak where there is one; kRefresh (`slm doctor`): measured again, the higher of
// the two kept (a peak is a maximum: a busier moment only makes a measurement lower).
enum class PeakCache { kUse, kRefresh };
DeviceInfo describe_device(const std::string& device, const std::string& precision, int threads,
                           double configured_peak_tflops, double configured_price_per_hour,
                           PeakCache mode = PeakCache::kUse);

// One timing of the peak: the best GEMM's FLOP/s, and the share of its threads' time the process
// had meanwhile (host/cpu_share.h; 1 on a GPU).
struct PeakTiming {
  double flops = 0;
  double cpu_share = 1;
};
// What the peak is, given the cached one (if any) and a timing now: the higher of the two; the
// cache takes the timing (store) only where it is higher and the process had its threads' time, so
// that a busy moment's low number is not what every later run divides by.
struct PeakChoice {
  double flops = 0;
  std::string source;  // as DeviceInfo::peak_source
  bool store = false;
};
PeakChoice choose_peak(std::optional<double> cached, const PeakTiming& now);

// The size the GEMM peak is timed at: from n = 256, the next size (2n) while its matmul, 8x the
// work, would take at most ~0.25 s by this one's `seconds`, up to max_n; 0 = time this n.
int64_t next_gemm_size(int64_t n, double seconds, int64_t max_n);

// Whether the timed matmuls go on after `done` of them over `elapsed_s` seconds: at least 5, and
// for at least ~2 s (at most 1000), the best of them kept: a shared host's speed moves in phases of
// a second or so (a 2-vCPU VM's bf16 GEMMs: 0.8 and 2.2 TFLOP/s in turn), a GPU's clocks ramp up,
// and a peak is the fast phase (a run that divides by a slow one reports an MFU above 100%).
bool more_gemm_repeats(int done, double elapsed_s);

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
