// data/batch_tensor.cpp: see batch_tensor.h.
#include "data/batch_tensor.h"

#include <ATen/ATen.h>
#include <ATen/ops/from_blob.h>
#ifdef SLM_HAVE_CUDA_KERNELS  // a build against a CUDA LibTorch
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace slm::data {
namespace {

// Pinned, then copied without blocking the host (a copy from pageable memory would wait for the
// device; the caching host allocator keeps the pinned block until the copy that reads it has run).
at::Tensor pinned_copy(const at::Tensor& t, const std::string& device) {
  return t.pin_memory().to(device, /*non_blocking=*/true);
}

#ifdef SLM_HAVE_CUDA_KERNELS
// The copies on a stream of their own, so that they run while the work already queued on the
// compute stream (the step before) runs; the compute stream waits for them (an event) before
// whatever is queued on it next, and the allocator keeps their memory until it is done with them.
std::pair<at::Tensor, at::Tensor> copied_beside(const at::Tensor& x, const at::Tensor& y, const std::string& device) {
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  at::Tensor xd, yd;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    xd = pinned_copy(x, device), yd = pinned_copy(y, device);
  }
  at::cuda::CUDAEvent copied;
  copied.record(side);
  copied.block(compute);
  xd.record_stream(compute), yd.record_stream(compute);
  return {xd, yd};
}
#endif

}  // namespace

std::pair<at::Tensor, at::Tensor> batch_tensors(Batch& b) {
  auto opts = at::TensorOptions().dtype(at::kLong);
  return {at::from_blob(b.inputs.data(), {b.B, b.T}, opts),
          at::from_blob(b.targets.data(), {b.B, b.T}, opts)};
}

std::pair<at::Tensor, at::Tensor> batch_on(Batch& b, const std::string& device) {
  auto [x, y] = batch_tensors(b);
  if (device == "cpu") return {x.clone(), y.clone()};
#ifdef SLM_HAVE_CUDA_KERNELS
  if (device == "cuda") return copied_beside(x, y, device);
#endif
  return {pinned_copy(x, device), pinned_copy(y, device)};
}

}  // namespace slm::data
