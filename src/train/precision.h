// train/precision.h: picking and applying the numeric precision of a run.
// Owns: resolve_precision ("auto" -> the faster choice for the device, measured on CPUs) and LossScaler (dynamic
// loss scaling, for fp16). LibTorch's autocast API differences are in util/torch_compat.h.
#pragma once
#include <cstdint>
#include <string>

#include "model/gpt2.h"

namespace slm::train {

// The step a precision is chosen for: the model's shape, the micro-batch and sequence length.
struct StepShape {
  model::GPT2Config model;
  int64_t micro_batch = 1, seq_len = 0;
};

// "auto" -> on CPUs the faster of fp32 and bf16 autocast for this step, measured
// (host/precision_probe.h; fp32 unless bf16 is at least 3% faster); "bf16" on CUDA devices with
// bf16 tensor cores (compute capability >= 8.0), "fp16" on older ones. Returns the choice and, in
// `why`, the reason for the log (with the measured times). UserError for fp16 on a CPU.
std::string resolve_precision(const std::string& requested, const std::string& device, const StepShape& shape,
                              std::string* why);

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


}  // namespace slm::train
