// model/gemm_bf16.cpp: see gemm_bf16.h. vdpbf16ps multiplies 16 pairs of bf16 values and adds
// each pair's sum to an fp32 lane, so both operands are read as 32-bit words holding two
// neighbours along K: a's word (row m, pair p) is broadcast to all lanes, b's 16 words (pair p,
// columns n..n+15) are one vector. The tile is 12 rows x 32 columns: 24 accumulators, 2 vectors of
// b, 1 broadcast of a (27 of the 32 registers), kept over the whole K (no K blocking: every K
// here fits a 12 x K strip of a and a K x 32 panel of b in the core's L2).
#include "model/gemm_bf16.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "model/avx512_rows.h"

namespace slm::model {
namespace {

using u16 = uint16_t;
using u32 = uint32_t;

constexpr int kRows = 12, kCols = 32;     // the register tile
constexpr int64_t kRowBlock = 8;          // tiles per block: a 96 x K strip of a in L2
constexpr int64_t kColBlock = 8;          // panels per block: 256 columns of b

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool env_says_aten() {
  const char* v = std::getenv("SLM_GEMM");
  return v && std::string(v) == "aten";
}

#if defined(__x86_64__)
#define SLM_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// a as pairs: word (row r, pair p) at words[r * rs + p * ps].
struct PairView {
  const u32* words;
  int64_t rs, ps;
};

// b packed in panels of kCols columns: panel j, pair p, column c at words[(j * K2 + p) * kCols + c].
struct Panels {
  const u32* words;
  int64_t k2;  // K / 2
};

// Where a tile's results go: fp32 or bf16 rows of `ld` values, bias (fp32) added, or fp32 added to.
struct Epilogue {
  void* out;
  int64_t ld;
  bool bf16, accumulate;
  const float* bias;
};

// The first `left` of 16 lanes (none when left <= 0).
SLM_BF16 inline __mmask16 mask16(int64_t left) {
  return left <= 0 ? 0 : left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1);
}

// 16 values of a row in T (float or bf16) as bf16 in the low halves of 16 32-bit lanes.
template <typename T>
SLM_BF16 inline __m512i bf16_lanes(const T* p, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, p)));
  } else {
    return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  }
}

// Rows 2p and 2p+1 of s (R x C, row stride sr, unit column stride) as pair words, in panels of
// `pw` columns (a multiple of 16): word (p, c) at out[(c / pw) * (k2 * pw) + p * pw + c % pw].
// Columns from C up to the panel's end are zero; an odd last row pairs with zeros.
template <typename T>
SLM_BF16 void interleave_pair(const T* s, int64_t sr, int64_t R, int64_t C, int64_t pw, int64_t k2, int64_t p,
                              u32* out) {
  const T* r0 = s + 2 * p * sr;
  const T* r1 = 2 * p + 1 < R ? r0 + sr : nullptr;
  for (int64_t c = 0, cp = ceil_div(C, pw) * pw; c < cp; c += 16) {
    const __mmask16 m = mask16(C - c);
    const __m512i lo = bf16_lanes(r0 + c, m);
    const __m512i hi = r1 ? bf16_lanes(r1 + c, m) : _mm512_setzero_si512();
    _mm512_storeu_si512(out + (c / pw) * (k2 * pw) + p * pw + c % pw, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
}

template <typename T>
void interleave_rows(const T* s, int64_t sr, int64_t R, int64_t C, int64_t pw, u32* out) {
  const int64_t k2 = ceil_div(R, 2);
  at::parallel_for(0, k2, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) interleave_pair(s, sr, R, C, pw, k2, p, out);
  });
}

// b = w^T with w (N x K, row stride sw, unit column stride): panels of w's rows. Word (p, c) of
// panel j is w[j*32 + c][2p, 2p+1]; rows from N up to the panel's end are zero.
template <typename T>
SLM_BF16 void transpose_panel(const T* w, int64_t sw, int64_t N, int64_t K, int64_t j, u32* out) {
  const int64_t k2 = ceil_div(K, 2);
  alignas(64) u32 row[16];
  u32* o = out + j * k2 * kCols;
  for (int64_t c = 0; c < kCols; ++c) {
    const int64_t n = j * kCols + c;
    if (n >= N) {
      for (int64_t p = 0; p < k2; ++p) o[p * kCols + c] = 0;
      continue;
    }
    const T* src = w + n * sw;
    for (int64_t p0 = 0; p0 < k2; p0 += 16) {
      const int64_t cnt = std::min<int64_t>(16, k2 - p0), values = std::min<int64_t>(32, K - 2 * p0);
      // 32 values as bf16 in the low halves of two vectors' lanes, then picked in order as 16-bit
      // elements: 16 words of (even, odd) pairs (an odd K's last value pairs with 0).
      const __m512i lo = bf16_lanes(src + 2 * p0, mask16(values));
      const __m512i hi = bf16_lanes(src + 2 * p0 + 16, mask16(values - 16));
      const __m512i packed = _mm512_permutex2var_epi16(
          lo, _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18,
                               16, 14, 12, 10, 8, 6, 4, 2, 0),
          hi);
      _mm512_store_si512(row, packed);
      for (int64_t q = 0; q < cnt; ++q) o[(p0 + q) * kCols + c] = row[q];
    }
  }
}

template <typename T>
void transpose_rows(const T* w, int64_t sw, int64_t N, int64_t K, u32* out) {
  at::parallel_for(0, ceil_div(N, kCols), 1, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) transpose_panel(w, sw, N, K, j, out);
  });
}

template <int R>
SLM_BF16 void tile(const PairView& a, int64_t row0, const u32* panel, int64_t k2, const Epilogue& e, int64_t col0,
                   int cols) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const u32* ar = a.words + row0 * a.rs;
  const int64_t rs = a.rs, ps = a.ps;
  for (int64_t p = 0; p < k2; ++p) {
    const __m512bh b0 = (__m512bh)(_mm512_loadu_si512(panel + p * kCols));
    const __m512bh b1 = (__m512bh)(_mm512_loadu_si512(panel + p * kCols + 16));
    const u32* ap = ar + p * ps;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512bh x = (__m512bh)(_mm512_set1_epi32(static_cast<int>(ap[r * rs])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
    }
  }
  const __mmask16 m[2] = {mask16(cols), mask16(cols - 16)};
  for (int h = 0; h < 2; ++h) {
    if (!m[h]) continue;
    const __m512 bias = e.bias ? _mm512_maskz_loadu_ps(m[h], e.bias + col0 + 16 * h) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      const int64_t off = (row0 + r) * e.ld + col0 + 16 * h;
      __m512 v = _mm512_add_ps(acc[r][h], bias);
      if (e.bf16) {
        _mm256_mask_storeu_epi16(static_cast<u16*>(e.out) + off, m[h], (__m256i)_mm512_cvtneps_pbh(v));
      } else {
        float* o = static_cast<float*>(e.out) + off;
        if (e.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m[h], o));
        _mm512_mask_storeu_ps(o, m[h], v);
      }
    }
  }
}

using TileFn = void (*)(const PairView&, int64_t, const u32*, int64_t, const Epilogue&, int64_t, int);
template <int... R>
constexpr TileFn pick_tile(int rows, std::integer_sequence<int, R...>) {
  TileFn fns[] = {&tile<R + 1>...};
  return fns[rows - 1];
}

void run(const PairView& a, const Panels& b, int64_t M, int64_t N, const Epilogue& e) {
  const int64_t row_tiles = ceil_div(M, kRows), panels = ceil_div(N, kCols);
  const int64_t row_blocks = ceil_div(row_tiles, kRowBlock), col_blocks = ceil_div(panels, kColBlock);
  at::parallel_for(0, row_blocks * col_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t bi = blk % row_blocks, bj = blk / row_blocks;
      for (int64_t j = bj * kColBlock; j < std::min(panels, (bj + 1) * kColBlock); ++j) {
        const int cols = static_cast<int>(std::min<int64_t>(kCols, N - j * kCols));
        for (int64_t i = bi * kRowBlock; i < std::min(row_tiles, (bi + 1) * kRowBlock); ++i) {
          const int rows = static_cast<int>(std::min<int64_t>(kRows, M - i * kRows));
          pick_tile(rows, std::make_integer_sequence<int, kRows>{})(a, i * kRows, b.words + j * b.k2 * kCols, b.k2, e,
                                                                     j * kCols, cols);
        }
      }
    }
  });
}

template <typename F>
void by_dtype(const at::Tensor& t, const F& f) {
  if (t.scalar_type() == at::kFloat) f(t.data_ptr<float>());
  else f(reinterpret_cast<const u16*>(t.data_ptr<at::BFloat16>()));
}

// a (M x K) as pair words; `keep` holds whatever storage the view points into.
PairView prepare_a(const at::Tensor& a, at::Tensor& keep) {
  const int64_t M = a.size(0), K = a.size(1);
  const bool aligned = reinterpret_cast<uintptr_t>(a.data_ptr()) % 4 == 0;
  if (a.scalar_type() == at::kBFloat16 && K % 2 == 0 && a.stride(1) == 1 && a.stride(0) % 2 == 0 && aligned) {
    keep = a;
    return {reinterpret_cast<const u32*>(a.data_ptr()), a.stride(0) / 2, 1};
  }
  if (a.stride(0) == 1 && M > 1) {  // a = s^T, s (K x M) row-major: pair s's rows
    const int64_t pw = ceil_div(M, 16) * 16;
    keep = at::empty({ceil_div(K, 2), pw}, a.options().dtype(at::kInt));
    by_dtype(a, [&](auto* s) { interleave_rows(s, a.stride(1), K, M, pw, reinterpret_cast<u32*>(keep.data_ptr())); });
    return {reinterpret_cast<const u32*>(keep.data_ptr()), 1, pw};
  }
  keep = at::zeros({M, 2 * ceil_div(K, 2)}, a.options().dtype(at::kBFloat16));  // an odd K pairs with 0
  keep.narrow(1, 0, K).copy_(a);
  return {reinterpret_cast<const u32*>(keep.data_ptr()), ceil_div(K, 2), 1};
}

// b (K x N) in panels of 32 columns.
Panels prepare_b(const at::Tensor& b_in, at::Tensor& keep) {
  const int64_t K = b_in.size(0), N = b_in.size(1);
  const at::Tensor b = (b_in.stride(0) == 1 || b_in.stride(1) == 1) ? b_in : b_in.contiguous();
  keep = at::empty({ceil_div(N, kCols), ceil_div(K, 2), kCols}, b.options().dtype(at::kInt));
  u32* out = reinterpret_cast<u32*>(keep.data_ptr());
  if (b.stride(0) == 1 && N > 1) by_dtype(b, [&](auto* w) { transpose_rows(w, b.stride(1), N, K, out); });
  else by_dtype(b, [&](auto* s) { interleave_rows(s, b.stride(0), K, N, kCols, out); });
  return {out, ceil_div(K, 2)};
}
#endif

}  // namespace

bool gemm_bf16_cpu() {
#if defined(__x86_64__)
  static const bool yes = avx512_rows::cpu_has() && __builtin_cpu_supports("avx512bf16") && !env_says_aten();
  return yes;
#else
  return false;
#endif
}

bool gemm_bf16_supported(const at::Tensor& a, const at::Tensor& b) {
  const auto ok = [](const at::Tensor& t) {
    return t.dim() == 2 && t.device().is_cpu() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16);
  };
  return gemm_bf16_cpu() && ok(a) && ok(b) && a.size(1) == b.size(0);
}

void gemm_bf16(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, const at::Tensor& bias, bool accumulate) {
  TORCH_CHECK(gemm_bf16_supported(a, b), "gemm_bf16: unsupported operands ", a.sizes(), " ", b.sizes());
  const int64_t M = a.size(0), N = b.size(1);
  TORCH_CHECK(out.is_contiguous() && out.dim() == 2 && out.size(0) == M && out.size(1) == N &&
                  (out.scalar_type() == at::kFloat || (out.scalar_type() == at::kBFloat16 && !accumulate)),
              "gemm_bf16: bad output");
  TORCH_CHECK(!bias.defined() || (bias.scalar_type() == at::kFloat && bias.is_contiguous() && bias.numel() == N),
              "gemm_bf16: bad bias");
  if (M == 0 || N == 0) return;
  if (a.size(1) == 0) {
    if (!accumulate) bias.defined() ? out.copy_(bias.expand({M, N})) : out.zero_();
    else if (bias.defined()) out.add_(bias);
    return;
  }
#if defined(__x86_64__)
  at::Tensor keep_a, keep_b;
  const PairView pa = prepare_a(a, keep_a);
  const Panels pb = prepare_b(b, keep_b);
  const Epilogue e{out.data_ptr(), N, out.scalar_type() == at::kBFloat16, accumulate,
                   bias.defined() ? bias.data_ptr<float>() : nullptr};
  run(pa, pb, M, N, e);
#endif
}

at::Tensor mm_bf16(const at::Tensor& a, const at::Tensor& b, at::ScalarType out_dtype, const at::Tensor& bias) {
  at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options().dtype(out_dtype));
  gemm_bf16(a, b, out, bias);
  return out;
}

}  // namespace slm::model
