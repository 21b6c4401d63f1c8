// train/device_update.h: the end of an inner step without a host sync, for GPUs. The gradient norm
// stays a device tensor, clipping multiplies by a factor computed on the device, and a non-finite
// norm (an fp16 overflow) skips the update inside LibTorch's fused AdamW; the host reads the loss
// and the norm once, after the update is queued, and only then learns whether it was skipped. The
// host path (step.cpp) reads the norm first and decides there: on a CPU that costs nothing.
// Owns: device_update_applies, UpdateScalars, clip_and_update, read_back.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>

#include "train/config.h"
#include "train/optim.h"

namespace slm::train {

// Whether a run updates on the device: system.device_update = "on", or "auto" on CUDA. It needs
// AdamW and LibTorch's fused AdamW (2.4+); every layout takes it (the norm's sums across ZeRO
// shards, tp slices and pipeline stages are device tensors too). "auto" where it cannot: false,
// with the reason in `why`; "on" where it cannot: UserError naming it.
bool device_update_applies(const std::string& setting, const std::string& device, const std::string& optimizer,
                           std::string* why);

// Clips grad in place where sqrt(norm_sq) exceeds o.grad_clip (> 0), by clip / (norm + 1e-6) as
// the host path does, and updates param with AdamW at lr unless norm_sq is not finite. Returns the
// skip flag the update took (0-dim float on the device, 1 = skipped). Queues work, never waits.
at::Tensor clip_and_update(AdamW& a, at::Tensor param, at::Tensor grad, const at::Tensor& norm_sq,
                           const OptimConfig& o, double lr);

// What a step reads from the host, as 0-dim fp32 tensors on the device (the same step whether it
// runs eagerly or is replayed from a CUDA graph: step_graph.h): the update's learning rate and
// number, the factor each micro-batch loss is multiplied by for its backward (its weight times the
// loss scale) and the one that unscales the gradients (1 / the loss scale). A new loss scale (fp16)
// is a new value here, not a new graph.
struct UpdateScalars {
  at::Tensor lr, step, loss_factor, unscale;
};
UpdateScalars make_update_scalars(const at::Tensor& like);  // on like's device
// Writes lr, step (>= 1), loss_factor and unscale into s (rounded to fp32; beyond its range: ±inf,
// as a double multiplied into an fp32 tensor becomes): small kernels queued before the step's work.
void set_update_scalars(UpdateScalars& s, double lr, int64_t step, double loss_factor = 1.0, double unscale = 1.0);
// clip_and_update with the learning rate and the step count from s; a.step is the caller's to count.
at::Tensor clip_and_update(AdamW& a, at::Tensor param, at::Tensor grad, const at::Tensor& norm_sq,
                           const OptimConfig& o, const UpdateScalars& s);

// {loss, norm_sq} on the host in one device sync; loss may be undefined (a stage without the head): 0.
std::pair<double, double> read_back(const at::Tensor& loss, const at::Tensor& norm_sq);

}  // namespace slm::train
