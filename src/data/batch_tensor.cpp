// data/batch_tensor.cpp: see batch_tensor.h.
#include "data/batch_tensor.h"

#include <ATen/ops/from_blob.h>

namespace slm::data {

std::pair<at::Tensor, at::Tensor> batch_tensors(Batch& b) {
  auto opts = at::TensorOptions().dtype(at::kLong);
  return {at::from_blob(b.inputs.data(), {b.B, b.T}, opts),
          at::from_blob(b.targets.data(), {b.B, b.T}, opts)};
}

}  // namespace slm::data
