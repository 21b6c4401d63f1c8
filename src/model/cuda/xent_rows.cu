// model/cuda/xent_rows.cu: see kernels.h (xent_rows). The GPU counterpart of model/xent_rows.cpp:
// where ATen runs log_softmax (a pass writing fp32), exp (a pass reading it) and a scatter, this
// reads each 16-bit row twice and writes it once, and never holds fp32 probabilities.
#include <cmath>

#include "model/cuda/dtype.cuh"

namespace slm::model::cuda {
namespace {

constexpr int kThreads = 512;  // per row: 16 warps

// A running (max, sum of exp(x - max)) pair and how two of them combine.
struct MaxSum {
  float m, s;
};
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// The block's combined pair, on every thread.
__device__ MaxSum block_max_sum(MaxSum v) {
  __shared__ MaxSum per_warp[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
    v = combine(v, other);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  MaxSum all{-INFINITY, 0.0f};
  for (int w = 0; w < kThreads / 32; ++w) all = combine(all, per_warp[w]);
  return all;
}

// Adds x to the running pair: one exp per element.
__device__ __forceinline__ void add_to(MaxSum& mine, float x) {
  if (x > mine.m) {
    mine.s = mine.s * expf(mine.m - x) + 1.0f;  // expf(-inf) = 0 for the first
    mine.m = x;
  } else if (x != -INFINITY) {  // a -inf logit adds nothing (and -inf - -inf is no number)
    mine.s += expf(x - mine.m);
  }
}

// A thread's elements are i, i + kThreads, ... (one block per row), taken kInFlight at a time with
// all their loads issued first: several loads in flight per thread rather than one.
constexpr int kInFlight = 8;

template <typename T>
__global__ void __launch_bounds__(kThreads) xent_rows_kernel(T* logits, float* loss, const int64_t* targets,
                                                             int64_t width, int64_t V, bool grad) {
  T* row = logits + static_cast<int64_t>(blockIdx.x) * width;
  MaxSum mine{-INFINITY, 0.0f};
  for (int64_t i0 = threadIdx.x; i0 < V; i0 += kInFlight * kThreads) {
    float x[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t i = i0 + u * kThreads;
      x[u] = i < V ? to_float(row[i]) : -INFINITY;  // -inf: nothing added
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) add_to(mine, x[u]);
  }
  const MaxSum all = block_max_sum(mine);
  const float lse = all.m + logf(all.s);
  const int64_t t = targets[blockIdx.x];
  const bool valid = t >= 0 && t < V;
  if (threadIdx.x == 0) loss[blockIdx.x] = valid ? lse - to_float(row[t]) : NAN;
  __syncthreads();  // row[t] is read before any thread overwrites it
  if (!grad) return;
  for (int64_t i0 = threadIdx.x; i0 < width; i0 += kInFlight * kThreads) {
    float x[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t i = i0 + u * kThreads;
      x[u] = i < V ? to_float(row[i]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t i = i0 + u * kThreads;
      if (i >= width) continue;
      const float p = i < V ? expf(x[u] - lse) : 0.0f;  // accurate expf: ~1 ulp, as the CPU rows
      row[i] = from_float<T>(i == t ? p - 1.0f : p);
    }
  }
}

template <typename T>
int launch(void* logits, float* loss, const int64_t* targets, int64_t rows, int64_t width, int64_t V, bool grad,
           void* stream) {
  if (rows == 0) return 0;
  SLM_LAUNCH(static_cast<unsigned>(rows), kThreads, static_cast<cudaStream_t>(stream), xent_rows_kernel<T>)(
      static_cast<T*>(logits), loss, targets, width, V, grad);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int xent_rows(void* logits, float* loss, const int64_t* targets, int64_t rows, int64_t width, int64_t V, bool grad,
              DType dtype, void* stream) {
  return by_dtype(dtype, [&](auto t) { return launch<decltype(t)>(logits, loss, targets, rows, width, V, grad, stream); });
}

}  // namespace slm::model::cuda
