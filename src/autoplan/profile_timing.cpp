// autoplan/profile_timing.cpp: see profile_timing.h.
#include "autoplan/profile_timing.h"

#include <algorithm>
#include <torch/cuda.h>
#include <torch/torch.h>

namespace slm::autoplan {

void device_sync(const std::string& device) {
  if (device != "cpu") torch::cuda::synchronize();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

model::GPT2 model_on_device(const ProfileRequest& r, int64_t layers, uint64_t seed) {
  model::GPT2Config c = r.model;
  c.n_layer = layers, c.dropout = 0;
  model::GPT2 m = model::init_gpt2(c, seed);
  if (r.device != "cpu")
    for (auto& [name, p] : model::named_parameters(m)) p.set_data(p.data().to(r.device));
  return m;
}

}  // namespace slm::autoplan
