// model/cuda/dtype.cuh: what every kernel file needs of the element types: loads to fp32 and
// stores rounded once from fp32, for float, bf16 and fp16; a warp's sum; and by_dtype, which runs a
// generic callable with a value of the C++ type a DType names; column_sums, where the kernels' partial
// sums meet (nesting it instantiates a kernel
// for each combination of its tensors' types).
#pragma once
#ifndef SLM_CUDA_ON_CPU  // tests/model/cuda/cuda_on_cpu.h stands in for CUDA there
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#include "model/cuda/kernels.h"

// SLM_LAUNCH(grid, block, stream, kernel)(arguments) is kernel<<<grid, block, 0, stream>>>(arguments);
// tests/model/cuda/cuda_on_cpu.h gives it a form that runs the kernel on the CPU.
#ifndef SLM_LAUNCH
#define SLM_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<grid, block, 0, stream>>>
#endif

namespace slm::model::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// out[c] = the sum over k < rows of m[k * cols + c], in a fixed order (the same bits every run:
// the kernels' partial sums per row group end here, no atomics). A block of 32 x 32 threads takes
// 32 columns: thread (x, y) adds rows y, y + 32, ... of column x in row order (a warp reads one row's
// 32 consecutive floats), then thread (x, 0) adds the 32 slices in y order. With one thread per
// column a few thousand partial rows would be a long serial chain on a handful of SMs.
constexpr int kColumnSumThreads = 32;
static __global__ void __launch_bounds__(kColumnSumThreads* kColumnSumThreads)
    column_sums_kernel(const float* m, int64_t rows, int64_t cols, float* out) {
  __shared__ float slice[kColumnSumThreads][kColumnSumThreads + 1];  // + 1: no bank conflicts
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnSumThreads + threadIdx.x;
  float s = 0.0f;
  if (c < cols)
    for (int64_t k = threadIdx.y; k < rows; k += kColumnSumThreads) s += m[k * cols + c];
  slice[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  float total = 0.0f;
  for (int y = 0; y < kColumnSumThreads; ++y) total += slice[y][threadIdx.x];
  out[c] = total;
}
inline int column_sums(const float* m, int64_t rows, int64_t cols, float* out, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((cols + kColumnSumThreads - 1) / kColumnSumThreads);
  SLM_LAUNCH(blocks, dim3(kColumnSumThreads, kColumnSumThreads), stream, column_sums_kernel)(m, rows, cols, out);
  return static_cast<int>(cudaGetLastError());
}

// f(T{}) for the type t names; the CUDA error code for an unknown DType.
template <typename F>
int by_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kFloat: return f(float{});
    case DType::kBFloat16: return f(__nv_bfloat16{});
    case DType::kHalf: return f(__half{});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace slm::model::cuda
