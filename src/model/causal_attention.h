// model/causal_attention.h: causal self-attention as batched matmuls over blocks of positions (a
// query block with each key block up to its own) around a one-pass causal softmax per row (scale,
// mask, max, exp, sum, normalise; backward likewise), for CPUs with AVX-512 (fp32, bf16) or AVX2
// (fp32; model/cpu_rows.h). Owns:
// causal_attention_rows_supported, causal_attention_rows.
// Why: on a 2-core CPU at short sequences, ATen's CPU flash attention (2.x) runs bf16 at ~20-60
// GFLOP/s and the unfused math path streams the (B, H, T, T) scores through memory five times; the
// batched matmuls here run at the GEMM peak and the softmax touches each row once, in cache
// (docs/benchmarks.md, bench_kernels). It keeps the (B, H, T, T) probabilities for backward like
// the math path does.
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::model {

// q, k, v (B, H, T, hd) CPU tensors of one dtype cpu_rows_take takes (float or bf16 with AVX-512,
// float with AVX2).
bool causal_attention_rows_supported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Whether the model should use it (measured on 2 cores, bench_kernels): instead of LibTorch 1.x's
// math path always (faster, less memory); instead of 2.x's SDPA only in bf16 up to T = 1024 (Zen 5
// EPYC, 2.15: 3.3x faster at T = 256, 2x at 1024, where it keeps the lower part of each head's
// (T, T) bf16 probabilities, which SDPA does not: ~31 MB per layer for gpt2 at micro-batch 2; in
// fp32 SDPA is as fast or faster; on an AVX2 EPYC the rows alone ran 1.2-1.3x SDPA's speed, but the
// tiny preset's fp32 step with them was slower in 5 of 6 alternating pairs, docs/benchmarks.md).
bool prefer_causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// softmax(q k^T / sqrt(hd), future positions masked) v, differentiable in q, k and v. Runs in q's
// dtype (autocast is the caller's: it passes tensors already cast).
at::Tensor causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

}  // namespace slm::model
