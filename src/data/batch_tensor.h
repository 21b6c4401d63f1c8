// data/batch_tensor.h: a loader Batch as LibTorch tensors (the one torch-facing file of data/).
// Owns: batch_tensors, batch_on. Kept apart so the rest of data/ compiles without torch headers.
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>

#include "data/loader.h"

namespace slm::data {

// (B, T) int64 CPU tensors viewing the batch's memory (no copy): `b` must outlive them; call
// .to(device) to move them. Returns {inputs, targets}.
std::pair<at::Tensor, at::Tensor> batch_tensors(Batch& b);
// The same as tensors on `device` ("cpu" | "cuda") that own their memory (`b` may go). On CUDA the
// batch is staged in pinned host memory and copied without blocking the host, on a side stream
// (in a CUDA build): the copy runs while the work already queued runs, and what the host queues
// next on the current stream waits for it.
std::pair<at::Tensor, at::Tensor> batch_on(Batch& b, const std::string& device);

}  // namespace slm::data
