// model/avx512_rows.h: the AVX-512 pieces the CPU kernels share (xent_rows.cpp,
// causal_attention.cpp, gelu_tanh.cpp): 16 values in float or bf16 as fp32 and back, a masked
// tail, exp. Include only from .cpp files; every function carries SLM_AVX512 and is
// called only after cpu_has() said yes. Elsewhere (not x86-64) only cpu_has() exists (false).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#if defined(__x86_64__)
// GCC 12 warns inside its own AVX-512 intrinsics (their "undefined" pass-through operands).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define SLM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

namespace slm::model::avx512_rows {

inline bool cpu_has() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
#else
  return false;
#endif
}

#if defined(__x86_64__)
// exp(x): x = n ln2 + r, |r| <= ln2/2, exp(r) by Cephes' expf polynomial (~1 ulp), times 2^n by
// scalef. Below -87.3 the result is ~0 and above 88.7 inf, as expf's would be.
SLM_AVX512 inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.8f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  for (float c : {1.3981999507E-3f, 8.3334519073E-3f, 4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// 16 values of a row in either dtype, as fp32 (bf16 is the high half of an fp32).
template <typename T>
SLM_AVX512 inline __m512 load16(const T* p, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// fp32 -> the row's dtype; bf16 rounded to nearest even, as c10's conversion does (NaN kept).
template <typename T>
SLM_AVX512 inline void store16(T* p, __m512 v, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, v);
  } else {
    __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    u = _mm512_srli_epi32(u, 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    u = _mm512_mask_mov_epi32(u, nan, _mm512_set1_epi32(0x7FC0));
    _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(u));
  }
}

inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1); }

#endif

}  // namespace slm::model::avx512_rows
