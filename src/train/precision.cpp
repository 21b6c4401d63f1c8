// train/precision.cpp: see precision.h.
#include "train/precision.h"

#include "host/cuda_info.h"
#include "host/memory_limit.h"
#include "host/precision_probe.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/torch_compat.h"

#include <algorithm>
#include <fmt/format.h>
#include <string>

namespace slm::train {

std::string resolve_precision(const std::string& requested, const std::string& device, const StepShape& shape,
                              std::string* why) {
  if (requested == "fp16" && device == "cpu")
    throw UserError("system: precision fp16 needs a CUDA device (on CPUs use bf16 or fp32)");
  if (requested != "auto") {
    *why = "as configured";
    return requested;
  }
  if (device == "cpu") {  // measured: CPUs differ (AMX, AVX512-BF16, emulated bf16) more than flags tell
    // A shape whose probe cannot fit (fp32: the larger) is not timed: the kernel would kill the
    // process before the plan's memory check (autoplan/memory_caps.h) could say why.
    const host::MemoryLimit limit = host::memory_limit();
    const int64_t b = host::probe_micro_batch(shape.micro_batch);
    if (const double need = blocks_bytes(shape.model, 1, b, shape.seq_len, "fp32"); limit.bytes > 0 && need > limit.bytes) {
      *why = fmt::format("auto: not measured: one block + head at {}x{} need ~{:.1f} GiB, more than {} ({:.1f} GiB)",
                         b, shape.seq_len, need / (1 << 30), limit.from,
                         limit.bytes / (1 << 30));
      return "fp32";
    }
    const host::PrecisionTiming t = host::time_precisions(shape.model, shape.micro_batch, shape.seq_len);
    const bool bf16 = t.bf16_s < 0.97 * t.fp32_s;  // a tie keeps fp32's accuracy
    *why = fmt::format("auto: one block + head, forward and backward at {}x{} on this CPU: fp32 {:.1f} ms, "
                       "bf16 {:.1f} ms ({}; ~/.cache/slmtrain/precision.json)",
                       t.micro_batch, shape.seq_len, t.fp32_s * 1e3, t.bf16_s * 1e3,
                       t.source);
    return bf16 ? "bf16" : "fp32";
  }
  const host::CudaInfo gpu = host::cuda_info();
  if (gpu.ok && gpu.major < 8) {
    *why = "auto: " + gpu.name + " has no bf16 tensor cores (compute capability " + std::to_string(gpu.major) +
           "." + std::to_string(gpu.minor) + "), fp16 with dynamic loss scaling";
    return "fp16";
  }
  *why = "auto: CUDA device with bf16" + (gpu.ok ? " (" + gpu.name + ")" : std::string());
  return "bf16";
}

bool update_loss_scale(LossScaler& s, bool finite) {
  if (!s.enabled) return finite;
  if (!finite) {
    s.scale = std::max(1.0, s.scale * 0.5);
    s.good_steps = 0;
    return false;
  }
  if (++s.good_steps % s.growth_interval == 0) s.scale *= 2.0;
  return true;
}

}  // namespace slm::train
