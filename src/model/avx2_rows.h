// model/avx2_rows.h: the AVX2 pieces the CPU kernels share on a CPU without AVX-512 (Zen 2 and 3,
// Intel's client cores, Haswell to Cascade Lake's smaller parts): 8 floats, a tail of fewer, exp,
// GPT-2's GELU and its slope, the same formulas as model/avx512_rows.h's (so the two agree to the
// last bit or so). fp32 only: these CPUs have no bf16 arithmetic, and `precision = "auto"` picks
// fp32 there. Include only from .cpp files; every function carries SLM_AVX2 and is called only
// after cpu_rows_isa() (model/cpu_rows.h) said AVX2.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "model/avx512_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define SLM_AVX2 __attribute__((target("avx2,fma")))

namespace slm::model::avx2_rows {

// Lanes [0, left) on (all bits set), the rest off: a tail's mask.
SLM_AVX2 inline __m256i mask8(int64_t left) {
  const int live = left >= 8 ? 8 : static_cast<int>(left);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(live), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// p[0, min(left, 8)) as floats, 0 beyond (nothing past them is read).
SLM_AVX2 inline __m256 load8(const float* p, int64_t left) {
  return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask8(left));
}

SLM_AVX2 inline void store8(float* p, __m256 v, int64_t left) {
  if (left >= 8)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, mask8(left), v);
}

// a * b rounded on its own: never fused into an FMA with what follows (GCC contracts the plain
// product of the intrinsics into one).
SLM_AVX2 inline __m256 mul_unfused(__m256 a, __m256 b) {
  __m256 p = _mm256_mul_ps(a, b);
  __asm__("" : "+x"(p));
  return p;
}

SLM_AVX2 inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

SLM_AVX2 inline float max8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

// a, with the lanes of a tail's mask replaced by b (the others kept).
SLM_AVX2 inline __m256 select8(__m256 a, __m256 b, __m256i mask) {
  return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(mask));
}

// 2^e for integer lanes e in [-126, 127].
SLM_AVX2 inline __m256 pow2(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}

// exp(x) as avx512_rows::exp16 computes it: x = n ln2 + r, Cephes' polynomial for exp(r), times
// 2^n made as two powers of two (2^(n/2) 2^(n - n/2): each a valid exponent from n = -126 to 128,
// the product exact where the result is normal). Below -87.3 ~0, above 88.7 inf.
SLM_AVX2 inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.8f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  for (float c : {1.3981999507E-3f, 8.3334519073E-3f, 4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f})
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(half)), pow2(_mm256_sub_epi32(ni, half)));
}

// GPT-2's GELU as x s, s = 1 / (1 + exp(-2u)), u = k0 (x + k1 x^3), and its slope
// s + 2 k0 (1 + 3 k1 x^2) x s (1 - s): avx512_rows.h says why this form, and holds k0 and k1.
using avx512_rows::kGeluK0, avx512_rows::kGeluK1;

SLM_AVX2 inline __m256 gelu_denominator(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 minus_2u =
      _mm256_mul_ps(x, _mm256_fmadd_ps(x2, _mm256_set1_ps(-2 * kGeluK0 * kGeluK1), _mm256_set1_ps(-2 * kGeluK0)));
  return _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(minus_2u));
}

SLM_AVX2 inline __m256 gelu8(__m256 x) { return _mm256_div_ps(x, gelu_denominator(x)); }

SLM_AVX2 inline __m256 gelu_slope8(__m256 x) {
  const __m256 s = _mm256_div_ps(_mm256_set1_ps(1.0f), gelu_denominator(x));
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 p =
      _mm256_mul_ps(x, _mm256_fmadd_ps(x2, _mm256_set1_ps(6 * kGeluK0 * kGeluK1), _mm256_set1_ps(2 * kGeluK0)));
  return _mm256_fmadd_ps(p, _mm256_fnmadd_ps(s, s, s), s);
}

}  // namespace slm::model::avx2_rows
#endif
