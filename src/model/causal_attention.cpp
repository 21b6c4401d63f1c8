// model/causal_attention.cpp: see causal_attention.h.
#include "model/causal_attention.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include <algorithm>
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

// rows of `len` scores each, groups of R consecutive rows are the sequence positions r0 .. r0+R-1.
template <typename T>
void softmax_rows(T* s, int64_t rows, int64_t R, int64_t len, int64_t r0, float scale) {
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> buf(static_cast<size_t>(len) + 16);
    for (int64_t r = begin; r < end; ++r) softmax_row(s + r * len, len, r0 + r % R, scale, buf.data());
  });
}

template <typename T>
void softmax_backward_rows(const T* p, T* dp, int64_t rows, int64_t R, int64_t len, int64_t r0, float scale) {
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) softmax_backward_row(p + r * len, dp + r * len, len, r0 + r % R, scale);
  });
}
#endif

// The kernels on a contiguous (..., R, len) float or bf16 block of scores whose rows are the
// sequence positions r0 .. r0+R-1 (and whose columns are positions 0 .. len-1).
void causal_softmax_(at::Tensor& s, int64_t r0, float scale) {
#if defined(__x86_64__)
  const int64_t R = s.size(-2), len = s.size(-1), rows = s.numel() / len;
  if (s.scalar_type() == at::kFloat) softmax_rows(s.data_ptr<float>(), rows, R, len, r0, scale);
  else softmax_rows(reinterpret_cast<uint16_t*>(s.data_ptr<at::BFloat16>()), rows, R, len, r0, scale);
#endif
}

void causal_softmax_backward_(const at::Tensor& p, at::Tensor& dp, int64_t r0, float scale) {
#if defined(__x86_64__)
  const int64_t R = p.size(-2), len = p.size(-1), rows = p.numel() / len;
  if (p.scalar_type() == at::kFloat)
    softmax_backward_rows(p.data_ptr<float>(), dp.data_ptr<float>(), rows, R, len, r0, scale);
  else
    softmax_backward_rows(reinterpret_cast<const uint16_t*>(p.data_ptr<at::BFloat16>()),
                          reinterpret_cast<uint16_t*>(dp.data_ptr<at::BFloat16>()), rows, R, len, r0, scale);
#endif
}

// Query blocks of kBlock positions: block i attends to keys 0 .. its last position only, so the
// products skip the masked upper triangle (at T = 1024, 4 blocks: 62.5% of the full products;
// gpt2's attention, bf16, 2 cores: 37 ms instead of 46; blocks of 128 were no faster).
constexpr int64_t kBlock = 256;

struct Span {
  int64_t r0, rows;  // the block's queries: positions r0 .. r0+rows-1; its keys: 0 .. r0+rows-1
};

std::vector<Span> spans(int64_t T) {
  std::vector<Span> out;
  for (int64_t r0 = 0; r0 < T; r0 += kBlock) out.push_back({r0, std::min(kBlock, T - r0)});
  return out;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct RowsAttention : torch::autograd::Function<RowsAttention> {
  // q, k, v (and dy) are made contiguous once: the model's heads are views of the (B, T, 3C)
  // projection whose batch and head dimensions do not fold into one, so each block's product would
  // copy its operands again (gpt2's shape, bf16, bench_kernels: 48-71 ms -> 38-41). The key and
  // value prefixes a block reads are still copied inside its products (oneDNN takes dense batches).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& v_in) {
    const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
    variable_list saved = {q, k, v};
    std::vector<at::Tensor> ys;
    for (const Span& b : spans(q.size(2))) {
      const int64_t keys = b.r0 + b.rows;
      at::Tensor p = at::matmul(q.narrow(2, b.r0, b.rows), k.narrow(2, 0, keys).transpose(-2, -1)).contiguous();
      causal_softmax_(p, b.r0, scale);  // (B, H, rows, keys) probabilities
      ys.push_back(at::matmul(p, v.narrow(2, 0, keys)));
      saved.push_back(p);
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return ys.size() == 1 ? ys[0] : at::cat(ys, 2);
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &q = s[0], &k = s[1], &v = s[2];
    const float scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const at::Tensor dy = g[0].to(v.scalar_type()).contiguous();
    const std::vector<Span> blocks = spans(q.size(2));
    // dk and dv sum over the query blocks in fp32, rounded once at the end (one block: its products).
    at::Tensor dq, dk, dv;
    if (blocks.size() > 1) {
      dq = at::empty_like(q);
      dk = at::zeros(k.sizes(), k.options().dtype(at::kFloat));
      dv = at::zeros(v.sizes(), v.options().dtype(at::kFloat));
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      const Span& b = blocks[i];
      const at::Tensor& p = s[3 + i];
      const int64_t keys = b.r0 + b.rows;
      const at::Tensor dyb = dy.narrow(2, b.r0, b.rows), qb = q.narrow(2, b.r0, b.rows);
      at::Tensor ds = at::matmul(dyb, v.narrow(2, 0, keys).transpose(-2, -1)).contiguous();  // dP, then dS in place
      causal_softmax_backward_(p, ds, b.r0, scale);
      at::Tensor dqb = at::matmul(ds, k.narrow(2, 0, keys)), dkb = at::matmul(ds.transpose(-2, -1), qb);
      at::Tensor dvb = at::matmul(p.transpose(-2, -1), dyb);
      if (blocks.size() == 1) return {dqb, dkb, dvb};
      dq.narrow(2, b.r0, b.rows).copy_(dqb);
      dk.narrow(2, 0, keys).add_(dkb);
      dv.narrow(2, 0, keys).add_(dvb);
    }
    return {dq, dk.to(k.scalar_type()), dv.to(v.scalar_type())};
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
  return q.scalar_type() == at::kBFloat16 && q.size(2) <= 1024;
}

at::Tensor causal_attention_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(causal_attention_rows_supported(q, k, v), "causal_attention_rows: needs float/bf16 CPU tensors and AVX-512");
  AutocastOff no_autocast;  // the inputs are already in the dtype to run in
  return RowsAttention::apply(q, k, v);
}

}  // namespace slm::model
