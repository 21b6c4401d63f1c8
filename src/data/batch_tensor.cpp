// data/batch_tensor.cpp: see batch_tensor.h.
#include "data/batch_tensor.h"

#include <ATen/ATen.h>
#include <ATen/ops/from_blob.h>

namespace slm::data {

std::pair<at::Tensor, at::Tensor> batch_tensors(Batch& b) {
  auto opts = at::TensorOptions().dtype(at::kLong);
  return {at::from_blob(b.inputs.data(), {b.B, b.T}, opts),
          at::from_blob(b.targets.data(), {b.B, b.T}, opts)};
}

std::pair<at::Tensor, at::Tensor> batch_on(Batch& b, const std::string& device) {
  auto [x, y] = batch_tensors(b);
  if (device == "cpu") return {x.clone(), y.clone()};
  // Pinned: a copy from pageable memory would wait for the device; the caching host allocator
  // keeps the pinned block until the copy that reads it has run.
  return {x.pin_memory().to(device, /*non_blocking=*/true), y.pin_memory().to(device, /*non_blocking=*/true)};
}

}  // namespace slm::data
