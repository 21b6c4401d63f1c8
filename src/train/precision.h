// train/precision.h: picking and applying the numeric precision of a run.
// Owns: resolve_precision ("auto" -> fastest safe choice for the device) and AutocastGuard
// (bf16 autocast with fp32 master weights, on CPU or CUDA, over a scope). Every LibTorch version
// difference of the autocast API lives here.
#pragma once
#include <string>

namespace slm::train {

// "auto" -> "bf16" on CUDA devices and on CPUs with AMX-BF16, else "fp32". Returns the choice and, in `why`, a short reason for the log.
std::string resolve_precision(const std::string& requested, const std::string& device,
                              std::string* why);
std::string resolve_device(const std::string& requested);  // "auto" -> cuda if available

class AutocastGuard {
 public:
  AutocastGuard(const std::string& precision, const std::string& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool on_ = false, cuda_ = false;
};

}  // namespace slm::train
