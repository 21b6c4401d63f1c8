// planner/devices.h: what the planner assumes about devices it cannot measure: a table of common
// GPUs (peak dense TFLOP/s per precision, memory, memory bandwidth, an achieved-efficiency factor,
// the runtime's own memory, an assumed on-demand price) and a CPU entry whose peak is measured.
// Owns: DeviceSpec, find_device, device_names, peak_flops, achieved_flops. Pure: no torch.
// Every number is an assumption stated in docs/planner.md; a profile (`slm profile`) replaces them.
#pragma once
#include <string>
#include <vector>

namespace slm::planner {

struct DeviceSpec {
  std::string name;                 // "T4", "A100-40GB", "cpu"
  double fp32_tflops = 0;           // dense peak, no tensor cores (TF32 not counted)
  double fp16_tflops = 0;           // dense tensor-core peak (0 = no fp16 units)
  double bf16_tflops = 0;           // dense tensor-core peak (0 = no bf16 units: fp32 speed)
  double memory_gb = 0;             // device memory, GiB (0 = unknown: no cap)
  double memory_bw_GBps = 0;        // for the optimizer step (memory bound)
  double efficiency = 0;            // fraction of peak a GPT-2 block reaches at large micro-batches
  double overhead_gb = 0;           // runtime memory outside the model state (CUDA context, allocator)
  double price_per_hour = 0;        // USD per device-hour, assumed (public on-demand list prices)
};

// Case-insensitive; also accepts "A100" (the 40 GB one), "RTX6000", "H100-80GB". nullptr if unknown.
const DeviceSpec* find_device(const std::string& name);
std::vector<std::string> device_names();
// Peak FLOP/s of d in precision "fp32" | "fp16" | "bf16" (falls back to fp32 without the units).
double peak_flops(const DeviceSpec& d, const std::string& precision);
// FLOP/s a GEMM-bound block reaches with `tokens` rows per micro-batch: peak x efficiency x
// tokens / (tokens + 512) (small GEMMs do not fill the device; 512 rows reach half).
double achieved_flops(const DeviceSpec& d, const std::string& precision, double tokens);

}  // namespace slm::planner
