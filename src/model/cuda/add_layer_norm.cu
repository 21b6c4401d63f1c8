// model/cuda/add_layer_norm.cu: see kernels.h (add_layer_norm_forward / _backward). Where eager
// PyTorch under bf16 autocast runs the residual add (fp32 in, fp32 out), layer_norm (fp32 in, fp32
// out) and the cast the next matmul needs (fp32 in, bf16 out), the forward reads the residual and
// the delta once and writes the sum and the normalised rows in the matmul's dtype; the backward
// gives the input gradient (the residual gradient added) in one pass and the weight and bias
// gradients without atomics, so that a step is reproducible bit for bit.
#include "model/cuda/dtype.cuh"

namespace slm::model::cuda {
namespace {

constexpr int kWarps = kAddLayerNormWarpsPerBlock;  // rows in flight per block: one warp each

// One warp per row. Three passes over the row, the last two reading back what this lane wrote
// (from cache): the sum and its mean, the centred variance (two-pass: no cancellation), the output.
// Unrolled by four, so that a lane has several loads in flight (__restrict__: no aliasing to wait on).
template <typename TS, typename TD, typename TY>
__global__ void __launch_bounds__(kWarps * 32)
add_layer_norm_forward_kernel(const TS* __restrict__ r, const TD* __restrict__ d, TS* __restrict__ s,
                              TY* __restrict__ y, const float* __restrict__ w, const float* __restrict__ b,
                              float* __restrict__ mean, float* __restrict__ rstd, int64_t rows, int64_t C, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t off = row * C;
  float sum = 0.0f;
#pragma unroll 4
  for (int64_t c = lane; c < C; c += 32) {
    const TS v = from_float<TS>(to_float(r[off + c]) + to_float(d[off + c]));  // rounded as ATen's add
    s[off + c] = v;
    sum += to_float(v);
  }
  const float mu = warp_sum(sum) / static_cast<float>(C);
  float sq = 0.0f;
#pragma unroll 4
  for (int64_t c = lane; c < C; c += 32) {
    const float x = to_float(s[off + c]) - mu;
    sq += x * x;
  }
  const float inv = rsqrtf(warp_sum(sq) / static_cast<float>(C) + eps);
#pragma unroll 4
  for (int64_t c = lane; c < C; c += 32)
    y[off + c] = from_float<TY>((to_float(s[off + c]) - mu) * inv * w[c] + b[c]);
  if (lane == 0) mean[row] = mu, rstd[row] = inv;
}

// Input gradient, one warp per row: with g = gy * w and xhat = (s - mean) * rstd,
// gx = rstd * (g - mean(g) - xhat * mean(g * xhat)) + gs (and gd = gx in y's dtype, where asked).
// Each lane also adds its columns' gy * xhat
// and gy over the warp's rows (a fixed order: no atomics) in registers: its columns are lane + 32 j,
// j < K (C <= 32 K; K a compile-time bucket, so the loops unroll and dw, db stay in registers),
// written once to the warp's partial row at the end.
template <typename TS, typename TY, int K>
__global__ void __launch_bounds__(kWarps * 32)
add_layer_norm_backward_kernel(const TY* __restrict__ gy, const TS* __restrict__ gs, const TS* __restrict__ s,
                               const float* __restrict__ mean, const float* __restrict__ rstd,
                               const float* __restrict__ w, TS* __restrict__ gx, TY* __restrict__ gd,
                               float* __restrict__ partial, int64_t rows, int64_t C) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  float dw[K], db[K];
#pragma unroll
  for (int j = 0; j < K; ++j) dw[j] = 0.0f, db[j] = 0.0f;
  for (int64_t row = warp; row < rows; row += warps) {
    const int64_t off = row * C;
    const float mu = mean[row], inv = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int64_t c = lane + 32 * j;
      if (c >= C) continue;
      const float dy = to_float(gy[off + c]), xhat = (to_float(s[off + c]) - mu) * inv;
      const float g = __fmul_rn(dy, w[c]);  // rounded alone, here and below: g - mean_g is 0 where all g are equal
      sum_g += g;
      sum_gx += g * xhat;
      dw[j] += dy * xhat;
      db[j] += dy;
    }
    const float mean_g = warp_sum(sum_g) / static_cast<float>(C), mean_gx = warp_sum(sum_gx) / static_cast<float>(C);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int64_t c = lane + 32 * j;
      if (c >= C) continue;
      const float xhat = (to_float(s[off + c]) - mu) * inv;
      const float g = __fmul_rn(to_float(gy[off + c]), w[c]);
      const float residual = gs ? to_float(gs[off + c]) : 0.0f;
      const TS v = from_float<TS>(inv * (g - mean_g - xhat * mean_gx) + residual);
      gx[off + c] = v;
      if (gd) gd[off + c] = from_float<TY>(to_float(v));  // as gx.to(y's dtype) rounds it
    }
  }
  float* const out = partial + warp * 2 * C;  // the warp's row: its dw, then its db
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const int64_t c = lane + 32 * j;
    if (c < C) out[c] = dw[j], out[C + c] = db[j];
  }
}

template <typename TS, typename TD, typename TY>
int forward_typed(const AddLayerNorm& a, void* stream) {
  const auto blocks = static_cast<unsigned>((a.rows + kWarps - 1) / kWarps);
  SLM_LAUNCH(blocks, kWarps * 32, static_cast<cudaStream_t>(stream), add_layer_norm_forward_kernel<TS, TD, TY>)(
      static_cast<const TS*>(a.r), static_cast<const TD*>(a.d), static_cast<TS*>(a.s), static_cast<TY*>(a.y), a.w, a.b,
      a.mean, a.rstd, a.rows, a.C, a.eps);
  return static_cast<int>(cudaGetLastError());
}

template <typename TS, typename TY, int K>
int backward_typed(const AddLayerNormGrad& g, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  SLM_LAUNCH(static_cast<unsigned>(g.warps / kWarps), kWarps * 32, s, add_layer_norm_backward_kernel<TS, TY, K>)(
      static_cast<const TY*>(g.gy), static_cast<const TS*>(g.gs), static_cast<const TS*>(g.s), g.mean, g.rstd, g.w,
      static_cast<TS*>(g.gx), static_cast<TY*>(g.gd), g.partial, g.rows, g.C);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  return column_sums(g.partial, g.warps, 2 * g.C, g.dwdb, s);  // a warp's row: its dw, then its db
}

// The kernel for the smallest bucket of columns per lane that holds C.
template <typename TS, typename TY>
int backward_bucketed(const AddLayerNormGrad& g, void* stream) {
  if (g.C <= 32 * 8) return backward_typed<TS, TY, 8>(g, stream);
  if (g.C <= 32 * 24) return backward_typed<TS, TY, 24>(g, stream);
  if (g.C <= 32 * 32) return backward_typed<TS, TY, 32>(g, stream);
  return backward_typed<TS, TY, kAddLayerNormMaxC / 32>(g, stream);
}

}  // namespace

int add_layer_norm_forward(const AddLayerNorm& a, void* stream) {
  if (a.rows == 0) return 0;
  return by_dtype(a.s_type, [&](auto s) {
    return by_dtype(a.d_type, [&](auto d) {
      return by_dtype(a.y_type, [&](auto y) { return forward_typed<decltype(s), decltype(d), decltype(y)>(a, stream); });
    });
  });
}

int add_layer_norm_backward(const AddLayerNormGrad& g, void* stream) {
  if (g.warps <= 0 || g.warps % kWarps != 0 || g.C < 1 || g.C > kAddLayerNormMaxC)
    return static_cast<int>(cudaErrorInvalidValue);
  return by_dtype(g.s_type, [&](auto s) {
    return by_dtype(g.y_type, [&](auto y) { return backward_bucketed<decltype(s), decltype(y)>(g, stream); });
  });
}

}  // namespace slm::model::cuda
