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
template <typename TS, typename TD, typename TY>
__global__ void __launch_bounds__(kWarps * 32) forward_kernel(const TS* r, const TD* d, TS* s, TY* y, const float* w,
                                                              const float* b, float* mean, float* rstd, int64_t rows,
                                                              int64_t C, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t off = row * C;
  float sum = 0.0f;
  for (int64_t c = lane; c < C; c += 32) {
    const TS v = from_float<TS>(to_float(r[off + c]) + to_float(d[off + c]));  // rounded as ATen's add
    s[off + c] = v;
    sum += to_float(v);
  }
  const float mu = warp_sum(sum) / static_cast<float>(C);
  float sq = 0.0f;
  for (int64_t c = lane; c < C; c += 32) {
    const float x = to_float(s[off + c]) - mu;
    sq += x * x;
  }
  const float inv = rsqrtf(warp_sum(sq) / static_cast<float>(C) + eps);
  for (int64_t c = lane; c < C; c += 32)
    y[off + c] = from_float<TY>((to_float(s[off + c]) - mu) * inv * w[c] + b[c]);
  if (lane == 0) mean[row] = mu, rstd[row] = inv;
}

// Input gradient, one warp per row: with g = gy * w and xhat = (s - mean) * rstd,
// gx = rstd * (g - mean(g) - xhat * mean(g * xhat)) + gs. Each warp also adds its rows' gy * xhat
// and gy into its own partial row of dw and db (rows taken in a fixed order: no atomics).
template <typename TS, typename TY>
__global__ void __launch_bounds__(kWarps * 32) backward_kernel(const TY* gy, const TS* gs, const TS* s,
                                                               const float* mean, const float* rstd, const float* w,
                                                               TS* gx, float* partial, int64_t rows, int64_t C) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  float* dw = partial + warp * 2 * C;
  float* db = dw + C;
  for (int64_t c = lane; c < C; c += 32) dw[c] = 0.0f, db[c] = 0.0f;
  for (int64_t row = warp; row < rows; row += warps) {
    const int64_t off = row * C;
    const float mu = mean[row], inv = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int64_t c = lane; c < C; c += 32) {
      const float dy = to_float(gy[off + c]), xhat = (to_float(s[off + c]) - mu) * inv;
      sum_g += dy * w[c];
      sum_gx += dy * w[c] * xhat;
      dw[c] += dy * xhat;
      db[c] += dy;
    }
    const float mean_g = warp_sum(sum_g) / static_cast<float>(C), mean_gx = warp_sum(sum_gx) / static_cast<float>(C);
    for (int64_t c = lane; c < C; c += 32) {
      const float xhat = (to_float(s[off + c]) - mu) * inv;
      const float g = to_float(gy[off + c]) * w[c];
      const float residual = gs ? to_float(gs[off + c]) : 0.0f;
      gx[off + c] = from_float<TS>(inv * (g - mean_g - xhat * mean_gx) + residual);
    }
  }
}

template <typename TS, typename TD, typename TY>
int forward_typed(const AddLayerNorm& a, void* stream) {
  const auto blocks = static_cast<unsigned>((a.rows + kWarps - 1) / kWarps);
  forward_kernel<TS, TD, TY><<<blocks, kWarps * 32, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const TS*>(a.r), static_cast<const TD*>(a.d), static_cast<TS*>(a.s), static_cast<TY*>(a.y), a.w, a.b,
      a.mean, a.rstd, a.rows, a.C, a.eps);
  return static_cast<int>(cudaGetLastError());
}

template <typename TS, typename TY>
int backward_typed(const AddLayerNormGrad& g, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  backward_kernel<TS, TY><<<static_cast<unsigned>(g.warps / kWarps), kWarps * 32, 0, s>>>(
      static_cast<const TY*>(g.gy), static_cast<const TS*>(g.gs), static_cast<const TS*>(g.s), g.mean, g.rstd, g.w,
      static_cast<TS*>(g.gx), g.partial, g.rows, g.C);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  return column_sums(g.partial, g.warps, 2 * g.C, g.dwdb, s);  // a warp's row: its dw, then its db
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
  if (g.warps <= 0 || g.warps % kWarps != 0) return static_cast<int>(cudaErrorInvalidValue);
  return by_dtype(g.s_type, [&](auto s) {
    return by_dtype(g.y_type, [&](auto y) { return backward_typed<decltype(s), decltype(y)>(g, stream); });
  });
}

}  // namespace slm::model::cuda
