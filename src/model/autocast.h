// model/autocast.h: bf16 or fp16 autocast over a scope, with fp32 master weights, on CPU or CUDA
// (LibTorch's API differences are in util/torch_compat.h). Owns: AutocastGuard, compute_dtype.
#pragma once
#include <ATen/core/Tensor.h>

#include <string>

namespace slm::model {

// `precision` "bf16" or "fp16" turns autocast on for `device` ("cpu" or "cuda") until the guard
// goes; "fp32" does nothing.
class AutocastGuard {
 public:
  AutocastGuard(const std::string& precision, const std::string& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool on_ = false, cuda_ = false;
  // dtype chosen by the constructor: bf16 or fp16
};

// The dtype a matmul on x runs in: autocast's when it is on for x's device, else x's own (for
// autograd functions that cast explicitly).
at::ScalarType compute_dtype(const at::Tensor& x);

}  // namespace slm::model
