// model/cuda/ops.cpp: see ops.h.
#include "model/cuda/ops.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>

#include "model/cuda/kernels.h"

namespace slm::model::cuda {
namespace {

DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kHalf;
    default: return DType::kFloat;
  }
}

void* stream_of(const at::Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

}  // namespace

bool kernels_take(const at::Tensor& t) {
  return t.is_cuda() && t.is_contiguous() &&
         (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf);
}

at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, int64_t V, bool grad) {
  TORCH_CHECK(kernels_take(logits) && logits.dim() == 2 && V >= 1 && V <= logits.size(1),
              "cuda::xent_rows: needs a contiguous float/bf16/fp16 CUDA matrix with at least V = ", V, " columns");
  const int64_t rows = logits.size(0);
  const at::Tensor t = targets.to(logits.device(), at::kLong).contiguous();
  TORCH_CHECK(t.numel() == rows, "cuda::xent_rows: ", t.numel(), " targets for ", rows, " rows");
  at::Tensor loss = at::empty({rows}, logits.options().dtype(at::kFloat));
  const int err = xent_rows(logits.data_ptr(), loss.data_ptr<float>(), t.data_ptr<int64_t>(), rows, logits.size(1), V,
                            grad, dtype_of(logits), stream_of(logits));
  TORCH_CHECK(err == 0, "cuda::xent_rows: CUDA error ", err);
  return loss;
}

}  // namespace slm::model::cuda
