// parallel/tensor/random.cpp: see random.h.
#include "parallel/tensor/random.h"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <map>
#include <mutex>

namespace slm::parallel::tensor {
namespace {

struct SplitStreams {
  uint64_t seed = 2718;                          // seed_split_rng's, else this
  std::map<c10::DeviceType, at::Tensor> state;  // per device type, made on first use
};
SplitStreams& streams() {
  static SplitStreams s;
  return s;
}

// The default generator of a device (CPU, or the current CUDA device's).
at::Generator generator_of(c10::Device d) { return at::globalContext().defaultGenerator(d); }

// The state `seed` gives a generator like g's (made through g itself, whose state is put back).
at::Tensor seeded_state(at::Generator& g, uint64_t seed) {
  std::lock_guard<std::mutex> lock(g.mutex());
  const at::Tensor was = g.get_state();
  g.set_current_seed(seed);
  at::Tensor state = g.get_state();
  g.set_state(was);
  return state;
}

// The split stream's state for device d's generator type (seeded on first use).
at::Tensor& stream_of(c10::Device d) {
  SplitStreams& s = streams();
  auto it = s.state.find(d.type());
  if (it == s.state.end()) {
    at::Generator g = generator_of(d);
    it = s.state.emplace(d.type(), seeded_state(g, s.seed)).first;
  }
  return it->second;
}

}  // namespace

void seed_split_rng(uint64_t seed, int tp_rank) {
  SplitStreams& s = streams();
  s.seed = seed + 2718 + static_cast<uint64_t>(tp_rank);  // Megatron's offset; any other would do
  s.state.clear();
}

SplitRngScope::SplitRngScope(c10::Device device) : device_(device) {
  const at::Tensor& split = stream_of(device_);
  at::Generator g = generator_of(device_);
  std::lock_guard<std::mutex> lock(g.mutex());
  default_state_ = g.get_state();
  g.set_state(split);
}

SplitRngScope::~SplitRngScope() {
  at::Generator g = generator_of(device_);
  std::lock_guard<std::mutex> lock(g.mutex());
  stream_of(device_) = g.get_state();
  g.set_state(default_state_);
}

at::Tensor split_rng_state(c10::Device device) { return stream_of(device); }

void set_split_rng_state(c10::Device device, const at::Tensor& state) { stream_of(device) = state; }

}  // namespace slm::parallel::tensor
