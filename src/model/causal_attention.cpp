// model/causal_attention.cpp: see causal_attention.h.
#include "model/causal_attention.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "model/avx2_rows.h"
#include "model/avx512_rows.h"
#include "model/cpu_rows.h"
#include "model/recompute.h"
#include "util/torch_compat.h"

namespace slm::model {
namespace {

#if defined(__x86_64__)
using namespace avx512_rows;

// A query position's row of scores lies in `segs` segments of L columns, `stride` apart (its query
// block's products with key blocks 0, 1, ...); its first n columns are live (keys 0 .. position).

// The live columns of segment c.
inline int64_t live_in(int64_t c, int64_t n, int64_t L) { return std::clamp<int64_t>(n - c * L, 0, L); }

// p[j] = softmax_j(scale * s[j]) over the live columns, exact zeros beyond; in place.
template <typename T>
SLM_AVX512 void softmax_row(T* s, int64_t stride, int64_t L, int64_t segs, int64_t n, float scale, float* buf) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    for (int64_t j = 0; j < live; j += 16) {
      const __mmask16 m = tail_mask(live - j);
      const __m512 v = _mm512_mul_ps(load16(s + c * stride + j, m), vs);
      _mm512_mask_storeu_ps(buf + c * L + j, m, v);
      mx = _mm512_mask_max_ps(mx, m, mx, v);
    }
  }
  const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {  // the live columns lie at buf[0, n)
    const __mmask16 m = tail_mask(n - j);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, buf + j), vmax));
    sum = _mm512_mask_add_ps(sum, m, sum, e);
    _mm512_mask_storeu_ps(buf + j, m, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    for (int64_t j = 0; j < L; j += 16) {  // the masked future gets exact zeros
      const __mmask16 m = tail_mask(L - j), on = j < live ? tail_mask(live - j) : 0;
      store16(s + c * stride + j, _mm512_maskz_mul_ps(on, _mm512_maskz_loadu_ps(on, buf + c * L + j), inv), m);
    }
  }
}

// ds[j] = scale * p[j] (dp[j] - sum_k p[k] dp[k]) over the live columns, 0 beyond; written over dp.
template <typename T>
SLM_AVX512 void softmax_backward_row(const T* p, T* dp, int64_t stride, int64_t L, int64_t segs, int64_t n,
                                     float scale) {
  __m512 dot = _mm512_setzero_ps();
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    for (int64_t j = 0; j < live; j += 16) {
      const __mmask16 m = tail_mask(live - j);
      dot = _mm512_fmadd_ps(load16(p + c * stride + j, m), load16(dp + c * stride + j, m), dot);
    }
  }
  const __m512 vdot = _mm512_set1_ps(_mm512_reduce_add_ps(dot)), vs = _mm512_set1_ps(scale);
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    const T* pc = p + c * stride;
    T* dc = dp + c * stride;
    for (int64_t j = 0; j < L; j += 16) {
      const __mmask16 m = tail_mask(L - j), on = j < live ? tail_mask(live - j) : 0;
      const __m512 g = _mm512_mul_ps(_mm512_mul_ps(load16(pc + j, on), _mm512_sub_ps(load16(dc + j, on), vdot)), vs);
      store16(dc + j, _mm512_maskz_mov_ps(on, g), m);
    }
  }
}

// The two rows above with AVX2, fp32.
SLM_AVX2 void softmax_row_avx2(float* s, int64_t stride, int64_t L, int64_t segs, int64_t n, float scale, float* buf) {
  using namespace avx2_rows;
  const __m256 vs = _mm256_set1_ps(scale);
  __m256 mx = _mm256_set1_ps(-INFINITY);
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    for (int64_t j = 0; j < live; j += 8) {
      const __m256 v = _mm256_mul_ps(load8(s + c * stride + j, live - j), vs);
      store8(buf + c * L + j, v, live - j);
      mx = select8(mx, _mm256_max_ps(mx, v), mask8(live - j));
    }
  }
  const __m256 vmax = _mm256_set1_ps(max8(mx));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j += 8) {  // the live columns lie at buf[0, n)
    const __m256 e = exp8(_mm256_sub_ps(load8(buf + j, n - j), vmax));
    sum = select8(sum, _mm256_add_ps(sum, e), mask8(n - j));
    store8(buf + j, e, n - j);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum8(sum));
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    for (int64_t j = 0; j < L; j += 8)  // the masked future gets exact zeros (load8 reads 0 beyond live)
      store8(s + c * stride + j, j < live ? _mm256_mul_ps(load8(buf + c * L + j, live - j), inv) : _mm256_setzero_ps(),
             L - j);
  }
}

SLM_AVX2 void softmax_backward_row_avx2(const float* p, float* dp, int64_t stride, int64_t L, int64_t segs, int64_t n,
                                        float scale) {
  using namespace avx2_rows;
  __m256 dot = _mm256_setzero_ps();
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    for (int64_t j = 0; j < live; j += 8)
      dot = _mm256_fmadd_ps(load8(p + c * stride + j, live - j), load8(dp + c * stride + j, live - j), dot);
  }
  const __m256 vdot = _mm256_set1_ps(sum8(dot)), vs = _mm256_set1_ps(scale);
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t live = live_in(c, n, L);
    const float* pc = p + c * stride;
    float* dc = dp + c * stride;
    for (int64_t j = 0; j < L; j += 8) {
      const __m256 on = _mm256_castsi256_ps(mask8(live - j));  // none where j >= live
      const __m256 g =
          _mm256_mul_ps(_mm256_mul_ps(load8(pc + j, live - j), _mm256_sub_ps(load8(dc + j, live - j), vdot)), vs);
      store8(dc + j, _mm256_and_ps(g, on), L - j);
    }
  }
}

// The rows of a (segs, BH, L, L) block of scores: row r is position r0 + r % L of its head.
template <typename T>
void softmax_rows(T* s, int64_t segs, int64_t BH, int64_t L, int64_t r0, float scale) {
  const bool avx2 = cpu_rows_isa() == CpuRows::kAvx2;  // fp32 only (cpu_rows_take)
  at::parallel_for(0, BH * L, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> buf(static_cast<size_t>(segs * L) + 16);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r0 + r % L + 1;
      if constexpr (std::is_same_v<T, float>) {
        if (avx2) {
          softmax_row_avx2(s + r * L, BH * L * L, L, segs, n, scale, buf.data());
          continue;
        }
      }
      softmax_row(s + r * L, BH * L * L, L, segs, n, scale, buf.data());
    }
  });
}

template <typename T>
void softmax_backward_rows(const T* p, T* dp, int64_t segs, int64_t BH, int64_t L, int64_t r0, float scale) {
  const bool avx2 = cpu_rows_isa() == CpuRows::kAvx2;
  at::parallel_for(0, BH * L, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r0 + r % L + 1;
      if constexpr (std::is_same_v<T, float>) {
        if (avx2) {
          softmax_backward_row_avx2(p + r * L, dp + r * L, BH * L * L, L, segs, n, scale);
          continue;
        }
      }
      softmax_backward_row(p + r * L, dp + r * L, BH * L * L, L, segs, n, scale);
    }
  });
}
#endif

// The kernels on a contiguous (segs, BH, L, L) float or bf16 block of scores: query block r0 / L's
// products with key blocks 0 .. segs-1.
void causal_softmax_(at::Tensor& s, int64_t r0, float scale) {
#if defined(__x86_64__)
  const int64_t segs = s.size(0), BH = s.size(1), L = s.size(2);
  avx512_rows::by_element_type(s.scalar_type(), [&](auto el) {
    softmax_rows(static_cast<decltype(el)*>(s.data_ptr()), segs, BH, L, r0, scale);
  });
#endif
}

void causal_softmax_backward_(const at::Tensor& p, at::Tensor& dp, int64_t r0, float scale) {
#if defined(__x86_64__)
  const int64_t segs = p.size(0), BH = p.size(1), L = p.size(2);
  avx512_rows::by_element_type(p.scalar_type(), [&](auto el) {
    using T = decltype(el);
    softmax_backward_rows(static_cast<const T*>(p.data_ptr()), static_cast<T*>(dp.data_ptr()), segs, BH, L, r0, scale);
  });
#endif
}

// The sequence in n blocks of L positions (the last zero-padded): query block i attends to key
// blocks 0 .. i only, so the products skip the masked upper triangle (4 blocks: 62.5% of the full
// products). Blocks of >= 256 positions (gpt2, T = 1024, bf16, 2 cores: 37 ms instead of 46 for
// the full products; blocks of 128 were no faster), at most 4 of them: a block's output and
// gradients sum over blocks in the tensors' dtype (bf16: rounded once per block; the tests' errors
// against double are those of one product over all keys). Several blocks have a multiple of 16
// positions, so that a row's segments fill whole vectors.
struct Blocks {
  int64_t T, n, L;
  int64_t len(int64_t i) const { return std::min(L, T - i * L); }  // the block's positions before padding
};

Blocks blocks_of(int64_t T) {
  const int64_t n = std::min<int64_t>(4, (T + 255) / 256);
  const int64_t L = n == 1 ? T : ((T + n - 1) / n + 15) / 16 * 16;
  return {T, (T + L - 1) / L, L};
}

// (B, H, T, D) in any layout -> (n, B*H, L, D), contiguous in `dtype`: every product's operand is
// then one dense batch (a prefix of the key positions in (B, H, T, D) is not, and oneDNN would copy it).
at::Tensor to_blocks(const at::Tensor& x, const Blocks& b, at::ScalarType dtype) {
  const int64_t B = x.size(0), H = x.size(1), D = x.size(3);
  at::Tensor out = at::empty({b.n, B * H, b.L, D}, x.options().dtype(dtype));
  for (int64_t i = 0; i < b.n; ++i) out[i].view({B, H, b.L, D}).narrow(2, 0, b.len(i)).copy_(x.narrow(2, i * b.L, b.len(i)));
  const int64_t last = b.len(b.n - 1);
  if (last < b.L) out[b.n - 1].narrow(1, last, b.L - last).zero_();
  return out;
}

// (n, B*H, L, D) -> (B, H, T, D) laid out as (B, T, H, D): the heads' concatenation the caller makes
// next (y.transpose(1, 2).reshape(B, T, C)) and the projection's gradient views are then free.
at::Tensor from_blocks(const at::Tensor& xb, const Blocks& b, int64_t B, int64_t H) {
  const int64_t D = xb.size(3);
  at::Tensor out = at::empty({B, b.T, H, D}, xb.options());
  for (int64_t i = 0; i < b.n; ++i)
    out.narrow(1, i * b.L, b.len(i)).copy_(xb[i].view({B, H, b.L, D}).narrow(2, 0, b.len(i)).transpose(1, 2));
  return out.transpose(1, 2);
}

// out = a @ b, or out += a @ b (the products' sum over blocks, in out's dtype).
void product(at::Tensor out, const at::Tensor& a, const at::Tensor& b, bool add) {
  if (add) out.baddbmm_(a, b);
  else at::bmm_out(out, a, b);
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct RowsAttention : torch::autograd::Function<RowsAttention> {
  // q, k, v in blocks (n, B*H, L, D); query block i's scores against key block j are p_i[j], a
  // contiguous (B*H, L, L) matrix, and its probabilities keep that layout for backward.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& v_in) {
    const int64_t B = q_in.size(0), H = q_in.size(1);
    const Blocks bl = blocks_of(q_in.size(2));
    const at::ScalarType dt = q_in.scalar_type();
    const at::Tensor q = to_blocks(q_in, bl, dt), k = to_blocks(k_in, bl, dt), v = to_blocks(v_in, bl, dt);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
    variable_list saved = {q, k, v};
    at::Tensor y = at::empty_like(q);
    for (int64_t i = 0; i < bl.n; ++i) {
      at::Tensor p = at::empty({i + 1, q.size(1), bl.L, bl.L}, q.options());
      for (int64_t j = 0; j <= i; ++j) product(p[j], q[i], k[j].transpose(1, 2), false);
      causal_softmax_(p, i * bl.L, scale);
      for (int64_t j = 0; j <= i; ++j) product(y[i], p[j], v[j], j > 0);
      saved.push_back(p);
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return from_blocks(y, bl, B, H);
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &q = s[0], &k = s[1], &v = s[2];
    const float scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const int64_t B = g[0].size(0), H = g[0].size(1);
    const Blocks bl = blocks_of(g[0].size(2));
    const at::Tensor dy = to_blocks(g[0], bl, v.scalar_type());  // zero padding: padded rows add nothing
    at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    for (int64_t i = 0; i < bl.n; ++i) {  // key block j's gradients sum over query blocks i >= j
      const at::Tensor& p = s[3 + i];
      at::Tensor ds = at::empty_like(p);  // dP, then dS in place
      for (int64_t j = 0; j <= i; ++j) product(ds[j], dy[i], v[j].transpose(1, 2), false);
      causal_softmax_backward_(p, ds, i * bl.L, scale);
      for (int64_t j = 0; j <= i; ++j) {
        product(dq[i], ds[j], k[j], j > 0);
        product(dk[j], ds[j].transpose(1, 2), q[i], i > j);
        product(dv[j], p[j].transpose(1, 2), dy[i], i > j);
      }
    }
    return {from_blocks(dq, bl, B, H), from_blocks(dk, bl, B, H), from_blocks(dv, bl, B, H)};
  }
};

}  // namespace

bool causal_attention_rows_supported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const at::ScalarType t = q.scalar_type();
  return q.device().is_cpu() && q.dim() == 4 && cpu_rows_take(t) && k.scalar_type() == t && v.scalar_type() == t;
}

bool prefer_causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (!causal_attention_rows_supported(q, k, v)) return false;
  if (!compat::kHasSdpa) return true;
  return q.scalar_type() == at::kBFloat16 && q.size(2) <= 1024;
}

at::Tensor causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(causal_attention_rows_supported(q, k, v),
              "causal_attention_rows: needs CPU tensors, fp32/bf16 with AVX-512 or fp32 with AVX2");
  AutocastOff no_autocast;  // the inputs are already in the dtype to run in
  return RowsAttention::apply(q, k, v);
}

}  // namespace slm::model
