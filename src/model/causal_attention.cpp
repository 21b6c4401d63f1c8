// model/causal_attention.cpp: see causal_attention.h.
#include "model/causal_attention.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "model/avx512_rows.h"
#include "model/recompute.h"
#include "util/torch_compat.h"

namespace slm::model {
namespace {

#if defined(__x86_64__)
using namespace avx512_rows;

// Row i of a (T, T) score block: p[j] = softmax_j(scale * s[j]) over j <= i, 0 beyond; in place.
template <typename T>
SLM_AVX512 void softmax_row(T* s, int64_t T_, int64_t i, float scale, float* buf) {
  const int64_t n = i + 1;
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const __m512 v = _mm512_mul_ps(load16(s + j, m), vs);
    _mm512_mask_storeu_ps(buf + j, m, v);
    mx = _mm512_mask_max_ps(mx, m, mx, v);
  }
  const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, buf + j), vmax));
    sum = _mm512_mask_add_ps(sum, m, sum, e);
    _mm512_mask_storeu_ps(buf + j, m, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < T_; j += 16) {  // the masked future gets exact zeros
    const __mmask16 m = tail_mask(T_ - j);
    const __mmask16 live = j < n ? tail_mask(n - j) : 0;
    store16(s + j, _mm512_maskz_mul_ps(live, _mm512_maskz_loadu_ps(live, buf + j), inv), m);
  }
}

// Row i: ds[j] = scale * p[j] (dp[j] - sum_k p[k] dp[k]) over j <= i, 0 beyond; written over dp.
template <typename T>
SLM_AVX512 void softmax_backward_row(const T* p, T* dp, int64_t T_, int64_t i, float scale) {
  const int64_t n = i + 1;
  __m512 dot = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    dot = _mm512_fmadd_ps(load16(p + j, m), load16(dp + j, m), dot);
  }
  const __m512 vdot = _mm512_set1_ps(_mm512_reduce_add_ps(dot)), vs = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < T_; j += 16) {
    const __mmask16 m = tail_mask(T_ - j);
    const __mmask16 live = j < n ? tail_mask(n - j) : 0;
    const __m512 g = _mm512_mul_ps(_mm512_mul_ps(load16(p + j, live), _mm512_sub_ps(load16(dp + j, live), vdot)), vs);
    store16(dp + j, _mm512_maskz_mov_ps(live, g), m);
  }
}

template <typename T>
void softmax_rows(T* s, int64_t rows, int64_t T_, float scale) {
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> buf(static_cast<size_t>(T_) + 16);
    for (int64_t r = begin; r < end; ++r) softmax_row(s + r * T_, T_, r % T_, scale, buf.data());
  });
}

template <typename T>
void softmax_backward_rows(const T* p, T* dp, int64_t rows, int64_t T_, float scale) {
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) softmax_backward_row(p + r * T_, dp + r * T_, T_, r % T_, scale);
  });
}
#endif

// The kernels on a contiguous (..., T, T) float or bf16 tensor.
void causal_softmax_(at::Tensor& s, float scale) {
#if defined(__x86_64__)
  const int64_t T_ = s.size(-1), rows = s.numel() / T_;
  if (s.scalar_type() == at::kFloat) softmax_rows(s.data_ptr<float>(), rows, T_, scale);
  else softmax_rows(reinterpret_cast<uint16_t*>(s.data_ptr<at::BFloat16>()), rows, T_, scale);
#endif
}

void causal_softmax_backward_(const at::Tensor& p, at::Tensor& dp, float scale) {
#if defined(__x86_64__)
  const int64_t T_ = p.size(-1), rows = p.numel() / T_;
  if (p.scalar_type() == at::kFloat)
    softmax_backward_rows(p.data_ptr<float>(), dp.data_ptr<float>(), rows, T_, scale);
  else
    softmax_backward_rows(reinterpret_cast<const uint16_t*>(p.data_ptr<at::BFloat16>()),
                          reinterpret_cast<uint16_t*>(dp.data_ptr<at::BFloat16>()), rows, T_, scale);
#endif
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct RowsAttention : torch::autograd::Function<RowsAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
    at::Tensor p = at::matmul(q, k.transpose(-2, -1)).contiguous();  // (B, H, T, T) scores
    causal_softmax_(p, scale);
    ctx->save_for_backward({q, k, v, p});
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return at::matmul(p, v);
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &q = s[0], &k = s[1], &v = s[2], &p = s[3];
    const at::Tensor dy = g[0].to(v.scalar_type());
    at::Tensor ds = at::matmul(dy, v.transpose(-2, -1)).contiguous();  // dP, then dS in place
    causal_softmax_backward_(p, ds, static_cast<float>(ctx->saved_data["scale"].toDouble()));
    return {at::matmul(ds, k), at::matmul(ds.transpose(-2, -1), q), at::matmul(p.transpose(-2, -1), dy)};
  }
};

}  // namespace

bool causal_attention_rows_supported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const at::ScalarType t = q.scalar_type();
  return avx512_rows::cpu_has() && q.device().is_cpu() && q.dim() == 4 && (t == at::kFloat || t == at::kBFloat16) &&
         k.scalar_type() == t && v.scalar_type() == t;
}

bool prefer_causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (!causal_attention_rows_supported(q, k, v)) return false;
  if (!compat::kHasSdpa) return true;
  return q.scalar_type() == at::kBFloat16 && q.size(2) <= 512;
}

at::Tensor causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(causal_attention_rows_supported(q, k, v), "causal_attention_rows: needs float/bf16 CPU tensors and AVX-512");
  AutocastOff no_autocast;  // the inputs are already in the dtype to run in
  return RowsAttention::apply(q, k, v);
}

}  // namespace slm::model
