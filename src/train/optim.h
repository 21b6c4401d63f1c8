// train/optim.h: the optimizer and the learning-rate schedule.
// Owns: AdamW (moments for one flat range of the parameters: everything, or this rank's ZeRO
// shard), make_adamw, adamw_step (the same arithmetic as torch.optim.AdamW: one pass over memory
// on the CPU, or ATen ops over cache-sized chunks; no buffer as large as the parameters), lr_at
// (warmup, optionally a stable stretch, then cosine/linear/sqrt/constant decay to a floor).
// Weight decay applies to matrices except the position embedding (not to biases, LayerNorm or
// wpe), as in GPT-2 practice; those ranges are listed once in AdamW::decay.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "parallel/flat.h"
#include "train/config.h"

namespace slm::train {

struct AdamW {
  at::Tensor exp_avg, exp_avg_sq;  // (shard.size) first and second moments
  at::Tensor scratch;              // (<= kChunk) denominator of one chunk, allocated once
  std::vector<std::pair<int64_t, int64_t>> decay;  // [begin, end) within the buffer: decayed
  int64_t step = 0;                // updates done
};

// Moments shaped like `param` (this rank's buffer); `segs` place it in the flat vector.
AdamW make_adamw(const parallel::FlatLayout& l, const std::vector<parallel::Segment>& segs, const at::Tensor& param);
// How adamw_step computes an update. automatic: LibTorch's fused kernel on CUDA tensors where it
// has one (2.x: the chunked loop's thousands of small kernels cost ~100x its time there, measured
// on an H100: 1.08 ns per parameter), slm's one-pass loop on contiguous fp32 CPU tensors, else
// the chunked ATen ops. The others force one way (tests compare them; one that does not apply
// falls back to chunked).
enum class AdamKernel { automatic, chunked, one_pass, libtorch_fused };
// One update of param (shard.size) with grad (shard.size) at learning rate lr (o.name = "sgd":
// plain SGD, the moments untouched). LibTorch's fused kernel takes the decay too: two launches
// (decayed pieces, the rest) for the whole update.
// found_inf (optional): a 0-dim float tensor on param's device, 1 where the gradients were not
// finite; the fused kernel then leaves parameters and moments as they were, decided on the device
// (no host sync). It needs AdamW and LibTorch 2.4+ (std::logic_error otherwise); a.step counts
// the update either way: the caller takes it back once it has read a skip.
void adamw_step(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o, double lr,
                AdamKernel kernel = AdamKernel::automatic, const at::Tensor& found_inf = {});
// The same update by LibTorch's fused kernel (AdamW only, 2.4+: std::logic_error otherwise) with
// the learning rate and the step count (the update's number, >= 1) read from 0-dim fp32 tensors on
// param's device: what a CUDA graph of the step replays, the values written into them before each
// replay. a.step is the caller's to count.
void adamw_step_by_tensors(AdamW& a, at::Tensor param, const at::Tensor& grad, const OptimConfig& o,
                           const at::Tensor& lr, const at::Tensor& step, const at::Tensor& found_inf = {});
// Learning rate for optimizer step `step` (0-based).
double lr_at(const ScheduleConfig& s, double peak_lr, int64_t step);
// Whether a global-norm limit clips a float tensor's gradients: above 0 and within float's range
// (a larger limit, such as 1e308, no float norm exceeds, and LibTorch refuses to convert it).
inline bool clips_float_norm(double grad_clip) {
  return grad_clip > 0 && grad_clip < std::numeric_limits<float>::max();
}

}  // namespace slm::train
