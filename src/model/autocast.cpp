// model/autocast.cpp: see autocast.h.
#include "model/autocast.h"

#include <ATen/autocast_mode.h>

#include "util/torch_compat.h"

namespace slm::model {

AutocastGuard::AutocastGuard(const std::string& precision, const std::string& device)
    : on_(precision == "bf16" || precision == "fp16"), cuda_(device == "cuda") {
  if (!on_) return;
  const at::ScalarType dtype = precision == "fp16" ? at::kHalf : at::kBFloat16;
  const at::DeviceType dt = cuda_ ? at::kCUDA : at::kCPU;
  compat::set_autocast_dtype(dt, dtype);
  compat::set_autocast_enabled(dt, true);
}

AutocastGuard::~AutocastGuard() {
  if (!on_) return;
  compat::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, false);
  at::autocast::clear_cache();
}

at::ScalarType compute_dtype(const at::Tensor& x) {
  const at::DeviceType d = x.device().type();
  if ((d == at::kCPU || d == at::kCUDA) && compat::autocast_enabled(d)) return compat::autocast_dtype(d);
  return x.scalar_type();
}

}  // namespace slm::model
