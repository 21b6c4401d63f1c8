// model/gemm_bf16.h: slm's own bf16 matrix product for CPUs with AVX512-BF16 (vdpbf16ps): bf16
// inputs, fp32 accumulation over the whole K, output in fp32 or bf16 with the bias added on the
// way out: the textbook register-tiled kernel (12 rows x 32 columns) over operands laid out for it
// once. An experiment: on the Zen 5 EPYC it ran at 0.93 TFLOP/s where oneDNN's bf16 GEMM (ATen's)
// runs at 0.98-1.0, the instruction's peak there, and the tiny model's step got slower.
// Used by model/linear_bf16.cpp and the fused head; gemm_bf16_supported() says where.
#pragma once
#include <ATen/ATen.h>

namespace slm::model {

// This CPU has AVX512-BF16 and SLM_GEMM is not "aten" (the switch back to ATen's GEMM, to compare).
bool gemm_bf16_cpu();

// Whether gemm_bf16 takes these operands: 2-D CPU tensors in fp32 or bf16 of matching K, and
// gemm_bf16_cpu().
bool gemm_bf16_supported(const at::Tensor& a, const at::Tensor& b);

// out (M, N) = a (M, K) @ b (K, N) [+ bias (N), fp32] [+ out when accumulate]. a and b in fp32 or
// bf16 with any strides (fp32 operands are rounded to bf16); out contiguous, fp32 or bf16
// (accumulate only into fp32). Runs on LibTorch's intra-op threads.
void gemm_bf16(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, const at::Tensor& bias = {},
               bool accumulate = false);

// The same, returning a new (M, N) tensor of dtype `out_dtype`.
at::Tensor mm_bf16(const at::Tensor& a, const at::Tensor& b, at::ScalarType out_dtype, const at::Tensor& bias = {});

}  // namespace slm::model
