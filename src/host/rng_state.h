// host/rng_state.h: the default random generators' states: read and set (a checkpoint keeps them),
// and kept as they were across a measurement (KeepRng).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace slm::host {

// The state of `device`'s default generator (the CPU's, or a GPU's: its Philox seed and offset).
at::Tensor generator_state(c10::Device device);
void set_generator_state(c10::Device device, const at::Tensor& state);

// Timing code (the GEMM peak, the precision probe, the planner's profile, the GPU attention
// chooser) makes its inputs with the default generators, which dropout draws its masks from too:
// a run that measured (nothing cached, a busy machine) would draw other masks than one that read
// the cache, and a resumed run (the generators restored from its checkpoint, then a measurement)
// other masks than the straight run. While a KeepRng lives, what is drawn is put back when it goes:
// the CPU's generator, and `device`'s where that is a GPU.
class KeepRng {
 public:
  explicit KeepRng(c10::Device device = c10::Device(c10::kCPU));
  ~KeepRng();
  KeepRng(const KeepRng&) = delete;
  KeepRng& operator=(const KeepRng&) = delete;

 private:
  c10::Device device_;
  at::Tensor cpu_, gpu_;
};

}  // namespace slm::host
