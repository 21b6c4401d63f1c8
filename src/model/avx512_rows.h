// model/avx512_rows.h: the AVX-512 pieces the CPU kernels share (xent_rows.cpp,
// causal_attention.cpp, gelu_tanh.cpp, bias_gelu_rows.cpp, add_layer_norm_rows.cpp): 16 values in
// float or bf16 as fp32 and back, bf16's rounding, a masked tail, exp, GPT-2's GELU and its
// slope; by_element_type picks a kernel's instantiation for a tensor's dtype. Include only from
// .cpp files; every function carries SLM_AVX512 and is called only after cpu_has() said yes.
// Elsewhere (not x86-64) only cpu_has(), by_element_type and add_blocks_in_order exist.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include <c10/core/ScalarType.h>

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

using u16 = uint16_t;  // bf16's bits, as the kernels read and write them

// f(T{}) for the element type t names: float, or u16 for bf16 (the kernels take no other).
template <typename F>
void by_element_type(c10::ScalarType t, F&& f) {
  t == c10::ScalarType::Float ? f(float{}) : f(u16{});
}

// out[j] = the sum over blocks k of partial[k * width + j], added in block order: the kernels' weight
// and bias gradients, the same bits on any number of threads (partial sums per block of rows).
inline void add_blocks_in_order(const float* partial, int64_t blocks, int64_t width, float* out) {
  for (int64_t j = 0; j < width; ++j) out[j] = 0.0f;
  for (int64_t k = 0; k < blocks; ++k)
    for (int64_t j = 0; j < width; ++j) out[j] += partial[k * width + j];
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

// a * b rounded on its own: never fused into an FMA with what follows (GCC contracts the plain
// product of the intrinsics into one).
SLM_AVX512 inline __m512 mul_unfused(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// v rounded to bf16 (to nearest even, as c10's conversion does; NaN kept), as fp32.
SLM_AVX512 inline __m512 round_bf16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  u = _mm512_and_si512(u, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_castsi512_ps(_mm512_mask_mov_epi32(u, nan, _mm512_set1_epi32(0x7FC00000)));
}

// fp32 -> the row's dtype (bf16: round_bf16).
template <typename T>
SLM_AVX512 inline void store16(T* p, __m512 v, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, v);
  } else {
    const __m512i u = _mm512_srli_epi32(_mm512_castps_si512(round_bf16(v)), 16);
    _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(u));
  }
}

// v, a value the row's dtype holds exactly (as as_stored gives it), to the row: no rounding left.
template <typename T>
SLM_AVX512 inline void store16_exact(T* p, __m512 v, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, v);
  } else {
    _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
  }
}

// v as the row's dtype holds it (bf16: round_bf16), as fp32.
template <typename T>
SLM_AVX512 inline __m512 as_stored(__m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return round_bf16(v);
  }
}

inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1); }

// GPT-2's GELU, 0.5 x (1 + tanh(u)) with u = k0 (x + k1 x^3), as x s with s = 1 / (1 + exp(-2u))
// (0.5 (1 + tanh(u)) itself; 1 + tanh(u) would cancel where x < 0), and its slope
// s + 2 k0 (1 + 3 k1 x^2) x s (1 - s). Below x ~ -9.4, exp(-2u) is inf and s 0, as they should be.
constexpr float kGeluK0 = 0.7978845608028654f, kGeluK1 = 0.044715f;  // sqrt(2/pi), the cubic's weight

// 1 + exp(-2u)
SLM_AVX512 inline __m512 gelu_denominator(__m512 x) {
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 minus_2u =
      _mm512_mul_ps(x, _mm512_fmadd_ps(x2, _mm512_set1_ps(-2 * kGeluK0 * kGeluK1), _mm512_set1_ps(-2 * kGeluK0)));
  return _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(minus_2u));
}

SLM_AVX512 inline __m512 gelu16(__m512 x) { return _mm512_div_ps(x, gelu_denominator(x)); }

SLM_AVX512 inline __m512 gelu_slope16(__m512 x) {
  const __m512 s = _mm512_div_ps(_mm512_set1_ps(1.0f), gelu_denominator(x));
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 p =
      _mm512_mul_ps(x, _mm512_fmadd_ps(x2, _mm512_set1_ps(6 * kGeluK0 * kGeluK1), _mm512_set1_ps(2 * kGeluK0)));
  return _mm512_fmadd_ps(p, _mm512_fnmadd_ps(s, s, s), s);
}

#endif

}  // namespace slm::model::avx512_rows
