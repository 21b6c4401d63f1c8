// train/precision.h: picking and applying the numeric precision of a run.
// Owns: resolve_precision ("auto" -> fastest safe choice for the device), AutocastGuard (bf16 or
// fp16 autocast with fp32 master weights, on CPU or CUDA, over a scope) and LossScaler (dynamic
// loss scaling, for fp16). Every LibTorch version difference of the autocast API lives here.
#pragma once
#include <cstdint>
#include <string>

namespace slm::train {

// "auto" -> "bf16" on CUDA devices with bf16 tensor cores (compute capability >= 8.0) and on CPUs
// with AMX-BF16, "fp16" on older CUDA devices, else "fp32". Returns the choice and, in `why`, a
// short reason for the log. UserError for fp16 on a CPU or bf16 on a CPU without AVX512-BF16.
std::string resolve_precision(const std::string& requested, const std::string& device,
                              std::string* why);
std::string resolve_device(const std::string& requested);  // "auto" -> cuda if available

// Dynamic loss scaling (as torch.cuda.amp.GradScaler): the loss is multiplied by `scale` before
// backward so that small fp16 gradients do not flush to zero; a step whose gradients overflow
// (non-finite norm) is skipped and the scale halved; after `growth_interval` good steps it doubles.
struct LossScaler {
  bool enabled = false;
  double scale = 65536.0;
  int64_t growth_interval = 2000;
  int64_t good_steps = 0;  // finite steps since the last change
};
// Call once per step with whether the gradients were finite; returns whether to apply the update.
bool update_loss_scale(LossScaler& s, bool finite);

class AutocastGuard {
 public:
  AutocastGuard(const std::string& precision, const std::string& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool on_ = false, cuda_ = false;
  // dtype chosen by the constructor: bf16 or fp16
};

}  // namespace slm::train
