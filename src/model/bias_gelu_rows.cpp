// model/bias_gelu_rows.cpp: see bias_gelu_rows.h.
#include "model/bias_gelu_rows.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "model/avx2_rows.h"
#include "model/avx512_rows.h"
#include "model/cpu_rows.h"

namespace slm::model {

#if defined(__x86_64__)
namespace {

using namespace avx512_rows;

// Rows [begin, end) of N columns: y = gelu(x + b).
template <typename T>
SLM_AVX512 void forward_rows(const T* x, const float* b, T* y, int64_t N, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    for (int64_t j = 0; j < N; j += 16) {
      const __mmask16 m = tail_mask(N - j);
      const int64_t k = i * N + j;
      store16(y + k, gelu16(_mm512_add_ps(load16(x + k, m), load16(b + j, m))), m);
    }
}

// Rows [begin, end): gx = gy gelu'(x + b); db[c] = the sum of column c's gx as stored, in row
// order.
template <typename T>
SLM_AVX512 void backward_rows(const T* gy, const T* x, const float* b, T* gx, float* db, int64_t N, int64_t begin,
                              int64_t end) {
  std::fill(db, db + N, 0.0f);
  for (int64_t i = begin; i < end; ++i)
    for (int64_t j = 0; j < N; j += 16) {
      const __mmask16 m = tail_mask(N - j);
      const int64_t k = i * N + j;
      const __m512 v = _mm512_add_ps(load16(x + k, m), load16(b + j, m));
      const __m512 g = as_stored<T>(mul_unfused(load16(gy + k, m), gelu_slope16(v)));  // db sums gx's own values
      store16_exact(gx + k, g, m);
      _mm512_mask_storeu_ps(db + j, m, _mm512_add_ps(load16(db + j, m), g));
    }
}

// The same with AVX2, fp32.
SLM_AVX2 void forward_rows_avx2(const float* x, const float* b, float* y, int64_t N, int64_t begin, int64_t end) {
  using namespace avx2_rows;
  for (int64_t i = begin; i < end; ++i)
    for (int64_t j = 0; j < N; j += 8)
      store8(y + i * N + j, gelu8(_mm256_add_ps(load8(x + i * N + j, N - j), load8(b + j, N - j))), N - j);
}

SLM_AVX2 void backward_rows_avx2(const float* gy, const float* x, const float* b, float* gx, float* db, int64_t N,
                                 int64_t begin, int64_t end) {
  using namespace avx2_rows;
  std::fill(db, db + N, 0.0f);
  for (int64_t i = begin; i < end; ++i)
    for (int64_t j = 0; j < N; j += 8) {
      const int64_t k = i * N + j, left = N - j;
      const __m256 g =
          mul_unfused(load8(gy + k, left), gelu_slope8(_mm256_add_ps(load8(x + k, left), load8(b + j, left))));
      store8(gx + k, g, left);
      store8(db + j, _mm256_add_ps(load8(db + j, left), g), left);
    }
}

// The bias gradient's partial sums: one per block of rows, added in block order (the same bits on
// any number of threads). Blocks of full rows keep each thread's reads and writes contiguous.
constexpr int64_t kRowsPerBlock = 64;

// Elements a thread should have at least before another one is worth waking.
constexpr int64_t kGrain = 1 << 14;

}  // namespace
#endif

bool bias_gelu_rows_take_bias(const at::Tensor& b, int64_t n) {
#if defined(__x86_64__)
  return cpu_rows_isa() != CpuRows::kNone && b.defined() && b.device().is_cpu() && b.is_contiguous() &&
         b.scalar_type() == at::kFloat && b.dim() == 1 && b.numel() == n && n >= 1;
#else
  (void)b, (void)n;
  return false;
#endif
}

bool bias_gelu_rows_take(const at::Tensor& x, const at::Tensor& b) {
  return x.defined() && x.device().is_cpu() && x.is_contiguous() && cpu_rows_take(x.scalar_type()) && x.dim() >= 1 &&
         bias_gelu_rows_take_bias(b, x.size(-1));
}

at::Tensor bias_gelu_rows_forward(const at::Tensor& x, const at::Tensor& b) {
  TORCH_CHECK(bias_gelu_rows_take(x, b),
              "bias_gelu_rows: needs AVX-512 (fp32/bf16) or AVX2 (fp32), a contiguous CPU tensor and an fp32 bias of "
              "its last size");
#if defined(__x86_64__)
  const int64_t N = x.size(-1), rows = x.numel() / N;
  at::Tensor y = at::empty_like(x);
  const int64_t grain = std::max<int64_t>(1, kGrain / N);
  if (cpu_rows_isa() == CpuRows::kAvx2) {
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      forward_rows_avx2(x.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), N, begin, end);
    });
    return y;
  }
  avx512_rows::by_element_type(x.scalar_type(), [&](auto el) {
    using T = decltype(el);
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* yp = static_cast<T*>(y.data_ptr());
    at::parallel_for(0, rows, grain,
                     [&](int64_t begin, int64_t end) { forward_rows(xp, b.data_ptr<float>(), yp, N, begin, end); });
  });
  return y;
#else
  return {};
#endif
}

std::vector<at::Tensor> bias_gelu_rows_backward(const at::Tensor& gy_in, const at::Tensor& x, const at::Tensor& b) {
  TORCH_CHECK(bias_gelu_rows_take(x, b) && gy_in.sizes() == x.sizes(),
              "bias_gelu_rows_backward: needs gy shaped like x");
#if defined(__x86_64__)
  const at::Tensor gy = gy_in.to(x.scalar_type()).contiguous();
  const int64_t N = x.size(-1), rows = x.numel() / N, blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  at::Tensor gx = at::empty_like(x), partial = at::empty({blocks, N}, b.options());
  const int64_t grain = std::max<int64_t>(1, kGrain / (kRowsPerBlock * N));
  float* pp = partial.data_ptr<float>();
  if (cpu_rows_isa() == CpuRows::kAvx2) {
    at::parallel_for(0, blocks, grain, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k)
        backward_rows_avx2(gy.data_ptr<float>(), x.data_ptr<float>(), b.data_ptr<float>(), gx.data_ptr<float>(),
                           pp + k * N, N, k * kRowsPerBlock, std::min(rows, (k + 1) * kRowsPerBlock));
    });
  } else {
    avx512_rows::by_element_type(x.scalar_type(), [&](auto el) {
      using T = decltype(el);
      const T *gyp = static_cast<const T*>(gy.data_ptr()), *xp = static_cast<const T*>(x.data_ptr());
      T* gxp = static_cast<T*>(gx.data_ptr());
      at::parallel_for(0, blocks, grain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k)
          backward_rows(gyp, xp, b.data_ptr<float>(), gxp, pp + k * N, N, k * kRowsPerBlock,
                        std::min(rows, (k + 1) * kRowsPerBlock));
      });
    });
  }
  at::Tensor db = at::empty({N}, b.options());
  avx512_rows::add_blocks_in_order(partial.data_ptr<float>(), blocks, N, db.data_ptr<float>());
  return {gx, db};
#else
  (void)gy_in;
  return {};
#endif
}

}  // namespace slm::model
