// model/add_layer_norm_rows.cpp: see add_layer_norm_rows.h.
#include "model/add_layer_norm_rows.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "model/avx512_rows.h"
#include "model/cpu_rows.h"

namespace slm::model {

#if defined(__x86_64__)
namespace {

using namespace avx512_rows;

// The weight gradients' partial sums: one per block of rows, added in block order.
constexpr int64_t kRowsPerBlock = 32;

// One row of C: s = r + d (d null: s = r); y = (s - mean) * rstd * w + b. Returns {mean, rstd}.
template <typename D, typename Y>
SLM_AVX512 std::pair<float, float> forward_row(const float* r, const D* d, const float* w, const float* b, float* s,
                                               Y* y, int64_t C, float eps) {
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < C; j += 16) {
    const __mmask16 m = tail_mask(C - j);
    const __m512 v = d ? _mm512_add_ps(load16(r + j, m), load16(d + j, m)) : load16(r + j, m);  // 0 beyond C
    _mm512_mask_storeu_ps(s + j, m, v);
    sum = _mm512_add_ps(sum, v);
  }
  const float mean = _mm512_reduce_add_ps(sum) / static_cast<float>(C);
  const __m512 vm = _mm512_set1_ps(mean);
  __m512 sq = _mm512_setzero_ps();
  for (int64_t j = 0; j < C; j += 16) {
    const __mmask16 m = tail_mask(C - j);
    const __m512 c = _mm512_maskz_sub_ps(m, load16(s + j, m), vm);
    sq = _mm512_fmadd_ps(c, c, sq);
  }
  const float rstd = 1.0f / std::sqrt(_mm512_reduce_add_ps(sq) / static_cast<float>(C) + eps);
  const __m512 vr = _mm512_set1_ps(rstd);
  for (int64_t j = 0; j < C; j += 16) {
    const __mmask16 m = tail_mask(C - j);
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load16(s + j, m), vm), vr);
    store16(y + j, _mm512_fmadd_ps(xhat, load16(w + j, m), load16(b + j, m)), m);
  }
  return {mean, rstd};
}

// One row's backward: with xhat = (s - mean) rstd and g = gy w, gx = gs + rstd (g - mean(g) -
// xhat mean(g xhat)), written to gx (fp32) and gd (d's dtype; null where that is gx); dw += gy xhat
// and db += gy.
template <typename G, typename D>
SLM_AVX512 void backward_row(const G* gy, const float* gs, const float* s, const float* w, float mean, float rstd,
                             int64_t C, float* gx, D* gd, float* dw, float* db) {
  const __m512 vm = _mm512_set1_ps(mean), vr = _mm512_set1_ps(rstd);
  __m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
  for (int64_t j = 0; j < C; j += 16) {
    const __mmask16 m = tail_mask(C - j);
    const __m512 xhat = _mm512_mul_ps(_mm512_maskz_sub_ps(m, load16(s + j, m), vm), vr), dy = load16(gy + j, m);
    const __m512 g = mul_unfused(dy, load16(w + j, m));  // g - mean(g) exactly 0 where a row's g are equal (C = 1)
    sg = _mm512_add_ps(sg, g), sgx = _mm512_fmadd_ps(g, xhat, sgx);
    _mm512_mask_storeu_ps(dw + j, m, _mm512_fmadd_ps(dy, xhat, load16(dw + j, m)));
    _mm512_mask_storeu_ps(db + j, m, _mm512_add_ps(dy, load16(db + j, m)));
  }
  const __m512 a = _mm512_set1_ps(_mm512_reduce_add_ps(sg) / static_cast<float>(C));
  const __m512 c = _mm512_set1_ps(_mm512_reduce_add_ps(sgx) / static_cast<float>(C));
  for (int64_t j = 0; j < C; j += 16) {
    const __mmask16 m = tail_mask(C - j);
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load16(s + j, m), vm), vr);
    const __m512 g = mul_unfused(load16(gy + j, m), load16(w + j, m));
    __m512 v = _mm512_mul_ps(vr, _mm512_sub_ps(_mm512_sub_ps(g, a), _mm512_mul_ps(xhat, c)));
    if (gs) v = _mm512_add_ps(v, load16(gs + j, m));
    _mm512_mask_storeu_ps(gx + j, m, v);
    if (gd) store16(gd + j, v, m);
  }
}

// f(A{}, B{}) for the element types of a and b: float, or u16 for bf16.
template <typename F>
void by_types(at::ScalarType a, at::ScalarType b, F&& f) {
  by_element_type(a, [&](auto x) { by_element_type(b, [&](auto y) { f(x, y); }); });
}

}  // namespace
#endif

static bool float_or_bf16(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16; }

bool add_layer_norm_rows_take(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w, const at::Tensor& b,
                              at::ScalarType y_type) {
#if defined(__x86_64__)
  if (cpu_rows_isa() != CpuRows::kAvx512 || !r.defined() || !w.defined() || !b.defined()) return false;
  const auto cpu_contiguous = [](const at::Tensor& t) { return t.device().is_cpu() && t.is_contiguous(); };
  if (!cpu_contiguous(r) || r.scalar_type() != at::kFloat || !float_or_bf16(y_type) || r.dim() < 1 || r.size(-1) < 1)
    return false;
  if (d.defined() && (!cpu_contiguous(d) || !float_or_bf16(d.scalar_type()) || r.sizes() != d.sizes())) return false;
  const auto vector_of_c = [&](const at::Tensor& v) {
    return cpu_contiguous(v) && v.scalar_type() == at::kFloat && v.dim() == 1 && v.numel() == r.size(-1);
  };
  return vector_of_c(w) && vector_of_c(b);
#else
  (void)r, (void)d, (void)w, (void)b, (void)y_type;
  return false;
#endif
}

std::vector<at::Tensor> add_layer_norm_rows_forward(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                                    const at::Tensor& b, double eps, at::ScalarType y_type) {
  TORCH_CHECK(add_layer_norm_rows_take(r, d, w, b, y_type),
              "add_layer_norm_rows: needs AVX-512 and contiguous CPU tensors: r fp32, d fp32/bf16, w and b fp32");
#if defined(__x86_64__)
  const int64_t C = r.size(-1), rows = r.numel() / C;
  at::Tensor s = at::empty_like(r), y = at::empty_like(r, r.options().dtype(y_type));
  at::Tensor mean = at::empty({rows}, r.options()), rstd = at::empty({rows}, r.options());
  by_types(d.defined() ? d.scalar_type() : at::kFloat, y_type, [&](auto d_el, auto y_el) {
    using D = decltype(d_el);
    using Y = decltype(y_el);
    const float *rp = r.data_ptr<float>(), *wp = w.data_ptr<float>(), *bp = b.data_ptr<float>();
    const D* dp = d.defined() ? static_cast<const D*>(d.data_ptr()) : nullptr;
    float *sp = s.data_ptr<float>(), *mp = mean.data_ptr<float>(), *vp = rstd.data_ptr<float>();
    Y* yp = static_cast<Y*>(y.data_ptr());
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        std::tie(mp[i], vp[i]) =
            forward_row(rp + i * C, dp ? dp + i * C : dp, wp, bp, sp + i * C, yp + i * C, C, static_cast<float>(eps));
    });
  });
  return {s, y, mean, rstd};
#else
  return {};
#endif
}

std::vector<at::Tensor> add_layer_norm_rows_backward(const at::Tensor& gy_in, const at::Tensor& gs_in,
                                                     const at::Tensor& s, const at::Tensor& mean,
                                                     const at::Tensor& rstd, const at::Tensor& w,
                                                     at::ScalarType d_type) {
  const at::Tensor gy = (float_or_bf16(gy_in.scalar_type()) ? gy_in : gy_in.to(at::kFloat)).contiguous();
  const at::Tensor gs = gs_in.defined() ? gs_in.to(at::kFloat).contiguous() : at::Tensor();
  TORCH_CHECK(gy.sizes() == s.sizes() && (!gs.defined() || gs.sizes() == s.sizes()) && float_or_bf16(d_type),
              "add_layer_norm_rows_backward: gradients shaped like the sum, d fp32 or bf16");
#if defined(__x86_64__)
  const int64_t C = s.size(-1), rows = s.numel() / C, blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  at::Tensor gx = at::empty_like(s), partial = at::zeros({blocks, 2, C}, s.options());
  at::Tensor gd = d_type == at::kFloat ? gx : at::empty_like(s, s.options().dtype(d_type));
  by_types(gy.scalar_type(), d_type, [&](auto g_el, auto d_el) {
    using G = decltype(g_el);
    using D = decltype(d_el);
    const G* gyp = static_cast<const G*>(gy.data_ptr());
    const float *gsp = gs.defined() ? gs.data_ptr<float>() : nullptr, *sp = s.data_ptr<float>();
    const float *wp = w.data_ptr<float>(), *mp = mean.data_ptr<float>(), *vp = rstd.data_ptr<float>();
    float *gxp = gx.data_ptr<float>(), *pp = partial.data_ptr<float>();
    D* gdp = d_type == at::kFloat ? nullptr : static_cast<D*>(gd.data_ptr());
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k)
        for (int64_t i = k * kRowsPerBlock; i < std::min(rows, (k + 1) * kRowsPerBlock); ++i)
          backward_row(gyp + i * C, gsp ? gsp + i * C : nullptr, sp + i * C, wp, mp[i], vp[i], C, gxp + i * C,
                       gdp ? gdp + i * C : nullptr, pp + k * 2 * C, pp + k * 2 * C + C);
    });
  });
  at::Tensor dwdb = at::empty({2, C}, s.options());
  avx512_rows::add_blocks_in_order(partial.data_ptr<float>(), blocks, 2 * C, dwdb.data_ptr<float>());
  return {gx, dwdb[0], dwdb[1], gd};
#else
  (void)mean, (void)rstd, (void)w;
  return {};
#endif
}

}  // namespace slm::model
