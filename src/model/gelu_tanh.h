// model/gelu_tanh.h: GPT-2's activation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), forward
// and backward in one pass each with AVX-512 (fp32, bf16) or AVX2 (fp32; model/cpu_rows.h), as
// x sigmoid(2u) from the shared exp (model/avx512_rows.h, avx2_rows.h); ATen's gelu elsewhere.
// Owns: gelu_tanh. Why: LibTorch's bf16 gelu and gelu_backward run at ~1 ns per element on a
// 2-core VM, ~8% of a bf16 training step of the tiny model (docs/benchmarks.md, bench_kernels).
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model {

// Same as at::gelu(x, "tanh") up to ~1e-6 relative (fp32) or bf16's rounding; differentiable.
at::Tensor gelu_tanh(const at::Tensor& x);

}  // namespace slm::model
