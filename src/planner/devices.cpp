// planner/devices.cpp: see devices.h. Sources: vendor data sheets (dense, no sparsity); prices are
// rounded public-cloud on-demand rates per GPU (2025-2026), an assumption a cluster file overrides.
#include "planner/devices.h"

#include <algorithm>
#include <cctype>

namespace slm::planner {
namespace {

// name, fp32, fp16, bf16, memory GiB, memory GB/s, efficiency, overhead GiB, $/h
const std::vector<DeviceSpec>& table() {
  static const std::vector<DeviceSpec> t = {
      {"T4", 8.1, 65, 0, 15, 320, 0.35, 0.5, 0.35},
      {"L4", 30.3, 121, 121, 22, 300, 0.40, 0.5, 0.70},
      {"RTX6000", 16.3, 130, 0, 24, 672, 0.35, 0.5, 0.80},
      {"A30", 10.3, 165, 165, 24, 933, 0.45, 0.6, 0.90},
      {"A40", 37.4, 150, 150, 45, 696, 0.40, 0.6, 1.10},
      {"A100-40GB", 19.5, 312, 312, 40, 1555, 0.50, 0.8, 2.90},
      {"A100-80GB", 19.5, 312, 312, 80, 2039, 0.50, 0.8, 3.70},
      // H100 / H200 efficiency measured: gpt2 in bf16 (1 x 64 x 1024 a step) trained by slm on an
      // H200 at 0.35 of the data sheet's peak in the model's FLOPs (docs/benchmarks.md, "On a GPU").
      {"H100", 67, 989, 989, 80, 3350, 0.35, 1.0, 4.50},
      {"H200", 67, 989, 989, 141, 4800, 0.35, 1.0, 5.50},  // the H100's chip with more, faster memory
      // The CPU's peak is measured (host/hardware.h) and filled in by the caller; memory unknown.
      {"cpu", 0, 0, 0, 0, 20, 0.80, 0.3, 0.04},
  };
  return t;
}

std::string canon(std::string s) {
  std::string o;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) o += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

}  // namespace

const DeviceSpec* find_device(const std::string& name) {
  std::string n = canon(name);
  if (n == "a100") n = "a10040gb";
  if (n == "h10080gb" || n == "h100sxm") n = "h100";
  if (n == "quadrortx6000") n = "rtx6000";
  for (const DeviceSpec& d : table())
    if (canon(d.name) == n) return &d;
  return nullptr;
}

std::vector<std::string> device_names() {
  std::vector<std::string> v;
  for (const DeviceSpec& d : table()) v.push_back(d.name);
  return v;
}

double peak_flops(const DeviceSpec& d, const std::string& precision) {
  double t = d.fp32_tflops;
  if (precision == "fp16" && d.fp16_tflops > 0) t = d.fp16_tflops;
  if (precision == "bf16" && d.bf16_tflops > 0) t = d.bf16_tflops;
  return t * 1e12;
}

double achieved_flops(const DeviceSpec& d, const std::string& precision, double tokens) {
  return peak_flops(d, precision) * d.efficiency * tokens / (tokens + 512.0);
}

}  // namespace slm::planner
