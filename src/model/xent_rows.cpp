// model/xent_rows.cpp: see xent_rows.h.
#include "model/xent_rows.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "model/avx2_rows.h"
#include "model/avx512_rows.h"
#include "model/cpu_rows.h"
#include "model/own_cuda_kernels.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/ops.h"
#endif

namespace slm::model {

#if defined(__x86_64__)
namespace {

using namespace avx512_rows;

// One row: returns its loss; with grad, row := softmax - onehot(target). buf holds V floats.
template <typename T>
SLM_AVX512 float xent_row(T* row, int64_t V, int64_t target, bool grad, float* buf) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < V; i += 16) {
    const __mmask16 m = tail_mask(V - i);
    const __m512 v = load16(row + i, m);
    _mm512_mask_storeu_ps(buf + i, m, v);
    mx = _mm512_mask_max_ps(mx, m, mx, v);
  }
  const float row_max = _mm512_reduce_max_ps(mx);
  const __m512 vmax = _mm512_set1_ps(row_max);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < V; i += 16) {
    const __mmask16 m = tail_mask(V - i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, buf + i), vmax));
    sum = _mm512_mask_add_ps(sum, m, sum, e);
    if (grad) _mm512_mask_storeu_ps(buf + i, m, e);
  }
  const float total = _mm512_reduce_add_ps(sum);
  const float picked = static_cast<float>(load16(row + target, 1)[0]);
  const float loss = std::log(total) + row_max - picked;
  if (!grad) return loss;
  const __m512 inv = _mm512_set1_ps(1.0f / total);
  buf[target] -= total;  // (e - total) / total = softmax - 1 at the target
  for (int64_t i = 0; i < V; i += 16) {
    const __mmask16 m = tail_mask(V - i);
    store16(row + i, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, buf + i), inv), m);
  }
  return loss;
}

// The same with AVX2, fp32.
SLM_AVX2 float xent_row_avx2(float* row, int64_t V, int64_t target, bool grad, float* buf) {
  using namespace avx2_rows;
  __m256 mx = _mm256_set1_ps(-INFINITY);
  for (int64_t i = 0; i < V; i += 8) mx = select8(mx, _mm256_max_ps(mx, load8(row + i, V - i)), mask8(V - i));
  const float row_max = max8(mx);
  const __m256 vmax = _mm256_set1_ps(row_max);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < V; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(load8(row + i, V - i), vmax));
    sum = select8(sum, _mm256_add_ps(sum, e), mask8(V - i));
    if (grad) store8(buf + i, e, V - i);
  }
  const float total = sum8(sum);
  const float loss = std::log(total) + row_max - row[target];
  if (!grad) return loss;
  const __m256 inv = _mm256_set1_ps(1.0f / total);
  buf[target] -= total;  // (e - total) / total = softmax - 1 at the target
  for (int64_t i = 0; i < V; i += 8) store8(row + i, _mm256_mul_ps(load8(buf + i, V - i), inv), V - i);
  return loss;
}

template <typename T>
void xent_all(T* data, int64_t rows, int64_t V, const int64_t* targets, bool grad, float* loss) {
  const bool avx2 = cpu_rows_isa() == CpuRows::kAvx2;  // fp32 only (cpu_rows_take)
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> buf(static_cast<size_t>(V));
    for (int64_t r = begin; r < end; ++r) {
      if constexpr (std::is_same_v<T, float>) {
        if (avx2) {
          loss[r] = xent_row_avx2(data + r * V, V, targets[r], grad, buf.data());
          continue;
        }
      }
      loss[r] = xent_row(data + r * V, V, targets[r], grad, buf.data());
    }
  });
}

}  // namespace
#endif

bool xent_rows_supported(const at::Tensor& logits, int64_t V) {
  if (logits.dim() != 2 || V < 1 || V > logits.size(1)) return false;
#ifdef SLM_HAVE_CUDA_KERNELS
  if (logits.is_cuda()) return own_cuda_kernels() && cuda::kernels_take(logits);
#endif
#if defined(__x86_64__)
  return logits.device().is_cpu() && logits.is_contiguous() && V == logits.size(1) &&
         cpu_rows_take(logits.scalar_type());
#else
  return false;
#endif
}

at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, bool grad, int64_t V) {
#ifdef SLM_HAVE_CUDA_KERNELS
  if (logits.is_cuda()) return cuda::xent_rows(logits, targets, V, grad);
#endif
  TORCH_CHECK(xent_rows_supported(logits, V),
              "xent_rows: needs a contiguous CPU matrix, fp32/bf16 with AVX-512 or fp32 with AVX2");
  const int64_t rows = logits.size(0);
  const at::Tensor t = targets.to(at::kLong).contiguous();
  TORCH_CHECK(t.numel() == rows, "xent_rows: ", t.numel(), " targets for ", rows, " rows");
  TORCH_CHECK(rows == 0 || (t.min().item<int64_t>() >= 0 && t.max().item<int64_t>() < V),
              "xent_rows: a target is outside [0, ", V, ")");
  at::Tensor loss = at::empty({rows}, logits.options().dtype(at::kFloat));
#if defined(__x86_64__)
  avx512_rows::by_element_type(logits.scalar_type(), [&](auto el) {
    xent_all(static_cast<decltype(el)*>(logits.data_ptr()), rows, V, t.data_ptr<int64_t>(), grad,
             loss.data_ptr<float>());
  });
#endif
  return loss;
}

}  // namespace slm::model
