// host/rng_state.cpp: see rng_state.h.
#include "host/rng_state.h"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <mutex>

namespace slm::host {

at::Tensor generator_state(c10::Device device) {
  at::Generator g = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

void set_generator_state(c10::Device device, const at::Tensor& state) {
  at::Generator g = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(state);
}

KeepRng::KeepRng(c10::Device device) : device_(device), cpu_(generator_state(c10::Device(c10::kCPU))) {
  if (device_.is_cuda()) gpu_ = generator_state(device_);
}

KeepRng::~KeepRng() {
  try {
    set_generator_state(c10::Device(c10::kCPU), cpu_);
    if (gpu_.defined()) set_generator_state(device_, gpu_);
  } catch (...) {  // a destructor does not throw; a GPU in error fails the run's next call anyway
  }
}

}  // namespace slm::host
