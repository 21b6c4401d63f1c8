// model/cuda/bias_gelu.cu: see kernels.h (bias_gelu_forward / _backward). GPT-2's MLP activation
// on the fc matmul's output without its bias: the bias add and the GELU in one pass forward; in
// the backward one pass gives the input gradient and, from the same registers, the bias gradient
// (eager PyTorch reads the gradient once more to sum it), without atomics.
#include "model/cuda/dtype.cuh"

namespace slm::model::cuda {
namespace {

constexpr int kThreads = 256;  // columns per block

constexpr float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kBeta = 0.044715f;

// GPT-2's GELU, 0.5 x (1 + tanh(u)) with u = alpha (x + beta x^3), as x s with s = 0.5 (1 + tanh(u))
// = 1 / (1 + exp(-2u)): 1 + tanh(u) would cancel where x < 0 (the CPU kernels' form too,
// model/avx512_rows.h). Below x ~ -9.4 exp(-2u) is inf and s 0, as they should be.
__device__ __forceinline__ float gelu_s(float x) {
  return 1.0f / (1.0f + expf(-2.0f * kAlpha * (x + kBeta * x * x * x)));
}
__device__ __forceinline__ float gelu(float x) { return x * gelu_s(x); }
__device__ __forceinline__ float gelu_grad(float x) {  // d gelu / dx = s + 2 alpha (1 + 3 beta x^2) x s (1 - s)
  const float s = gelu_s(x);
  return s + 2.0f * kAlpha * (1.0f + 3.0f * kBeta * x * x) * x * s * (1.0f - s);
}

// A thread's rows in a row group are group, group + groups, ...: taken kRowsInFlight at a time,
// all of their loads issued before the first store (__restrict__: nothing to wait on), so that a
// thread has several loads in flight rather than one.
constexpr int kRowsInFlight = 8;

// Block (tile, group), as the backward's: the thread's column over the rows of its row group (the
// bias read once, no index division per element).
template <typename T>
__global__ void __launch_bounds__(kThreads)
bias_gelu_forward_kernel(const T* __restrict__ x, const float* __restrict__ b, T* __restrict__ y, int64_t rows,
                         int64_t N) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t groups = gridDim.y;
  if (col >= N) return;
  const float bias = b[col];
  for (int64_t r0 = blockIdx.y; r0 < rows; r0 += kRowsInFlight * groups) {
    float v[kRowsInFlight];
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) {
      const int64_t r = r0 + u * groups;
      v[u] = r < rows ? to_float(x[r * N + col]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) {
      const int64_t r = r0 + u * groups;
      if (r < rows) y[r * N + col] = from_float<T>(gelu(v[u] + bias));
    }
  }
}

// Block (tile, group): columns [tile * kThreads, +kThreads), one per thread, over the rows of row
// group `group` (rows group, group + groups, ...); the thread's sum of its column's gx (in row
// order) goes to partial[group][column].
template <typename T>
__global__ void __launch_bounds__(kThreads)
bias_gelu_backward_kernel(const T* __restrict__ gy, const T* __restrict__ x, const float* __restrict__ b,
                          T* __restrict__ gx, float* __restrict__ partial, int64_t rows, int64_t N) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t group = blockIdx.y, groups = gridDim.y;
  if (col >= N) return;
  const float bias = b[col];
  float sum = 0.0f;
  for (int64_t r0 = group; r0 < rows; r0 += kRowsInFlight * groups) {
    float dy[kRowsInFlight], v[kRowsInFlight];
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) {
      const int64_t r = r0 + u * groups;
      dy[u] = r < rows ? to_float(gy[r * N + col]) : 0.0f;
      v[u] = r < rows ? to_float(x[r * N + col]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) {
      const int64_t r = r0 + u * groups;
      if (r >= rows) continue;
      const T g = from_float<T>(dy[u] * gelu_grad(v[u] + bias));
      gx[r * N + col] = g;
      sum += to_float(g);  // the bias gradient of the rounded input gradient, as eager's sum sees it
    }
  }
  partial[group * N + col] = sum;
}

template <typename T>
int forward_typed(const BiasGelu& a, void* stream) {
  const dim3 grid(static_cast<unsigned>((a.N + kThreads - 1) / kThreads), static_cast<unsigned>(a.groups));
  SLM_LAUNCH(grid, kThreads, static_cast<cudaStream_t>(stream), bias_gelu_forward_kernel<T>)(
      static_cast<const T*>(a.x), a.b, static_cast<T*>(a.y), a.rows, a.N);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int backward_typed(const BiasGeluGrad& g, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>((g.N + kThreads - 1) / kThreads), static_cast<unsigned>(g.groups));
  SLM_LAUNCH(grid, kThreads, s, bias_gelu_backward_kernel<T>)(static_cast<const T*>(g.gy), static_cast<const T*>(g.x),
                                                              g.b, static_cast<T*>(g.gx), g.partial, g.rows, g.N);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  return column_sums(g.partial, g.groups, g.N, g.db, s);
}

}  // namespace

int bias_gelu_forward(const BiasGelu& a, void* stream) {
  if (a.rows == 0 || a.N == 0) return 0;
  if (a.groups < 1 || a.groups > 65535) return static_cast<int>(cudaErrorInvalidValue);
  return by_dtype(a.type, [&](auto t) { return forward_typed<decltype(t)>(a, stream); });
}

int bias_gelu_backward(const BiasGeluGrad& g, void* stream) {
  if (g.groups < 1 || g.groups > 65535 || g.N == 0) return static_cast<int>(cudaErrorInvalidValue);
  return by_dtype(g.type, [&](auto t) { return backward_typed<decltype(t)>(g, stream); });
}

}  // namespace slm::model::cuda
