// data/batch_tensor.h: a loader Batch as LibTorch tensors (the one torch-facing file of data/).
// Owns: batch_tensors. Kept apart so the rest of data/ compiles without torch headers.
#pragma once
#include <ATen/core/Tensor.h>

#include <utility>

#include "data/loader.h"

namespace slm::data {

// (B, T) int64 CPU tensors viewing the batch's memory (no copy): `b` must outlive them; call
// .to(device) to move them. Returns {inputs, targets}.
std::pair<at::Tensor, at::Tensor> batch_tensors(Batch& b);

}  // namespace slm::data
