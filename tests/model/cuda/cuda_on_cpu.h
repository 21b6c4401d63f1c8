// tests/model/cuda/cuda_on_cpu.h: just enough of CUDA to run the project's own kernels
// (src/model/cuda/*.cu, included after this header) on the CPU, so that every build tests their
// source without a GPU (tests/model/cuda/kernels_on_cpu_test.cpp). Each CUDA thread is a fiber
// (ucontext) with its own stack; a block's fibers run on the calling thread, one at a time and in
// a shuffled order (seeded: the same every run), so that a missing barrier shows as a wrong
// result, until each ends or waits at __syncthreads or a warp shuffle, which release once every
// live thread of the block (of the warp) is there; threads that have ended count as arrived, as
// on the hardware.
// A barrier that not every live thread reaches, which would hang a GPU, ends the launch with
// cudaErrorLaunchFailure; a block of more than 1,024 threads or an empty grid is
// cudaErrorInvalidConfiguration. Blocks run one after another, so `__shared__` is `static`.
// bf16 rounds to nearest even from fp32's bits and fp16 converts through _Float16, as
// __float2bfloat16 and __float2half do. What this cannot show: speed, coalescing, real races.
// Owns: the CUDA names the kernels use and SLM_LAUNCH's CPU form.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorInvalidConfiguration = 9,
                   cudaErrorLaunchFailure = 719 };
struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct __nv_bfloat16 {
  uint16_t bits;
};
struct __half {
  _Float16 value;
};
inline float __bfloat162float(__nv_bfloat16 v) {
  const uint32_t u = uint32_t{v.bits} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  if (std::isnan(f)) return {static_cast<uint16_t>(0x7fc0)};
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // to nearest, ties to even
  return {static_cast<uint16_t>(u >> 16)};
}
inline float __half2float(__half v) { return static_cast<float>(v.value); }
inline float __fmul_rn(float a, float b) { return a * b; }  // the stand-in's build does not contract
inline __half __float2half(float f) { return {static_cast<_Float16>(f)}; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

namespace slm::cuda_on_cpu {

struct Fiber {
  enum State { kRunnable, kAtBlockBarrier, kAtWarpBarrier, kDone };
  ucontext_t context;
  dim3 index;
  State state = kRunnable;
};

// The block being run: its threads, the scheduler's context, a slot per thread for shuffles.
struct Block {
  std::vector<Fiber> fibers;
  std::unique_ptr<char[]> stacks;
  ucontext_t scheduler;
  size_t current = 0;
  std::vector<float> slots;
  const std::function<void()>* body = nullptr;
};

inline Block* running = nullptr;
inline dim3 thread_index, block_index, block_dim, grid_dim;  // the running thread's
inline cudaError_t last_error = cudaSuccess;
constexpr size_t kStackBytes = 64 * 1024;

// The running thread waits in state s (a barrier) until the scheduler releases it.
inline void wait_at(Fiber::State s) {
  Fiber& f = running->fibers[running->current];
  f.state = s;
  swapcontext(&f.context, &running->scheduler);
}

inline void fiber_main() {  // returns to the scheduler through uc_link
  (*running->body)();
  running->fibers[running->current].state = Fiber::kDone;
}

// Releases threads [begin, end) waiting in state s if every one of them not done is.
inline bool release(Block& b, size_t begin, size_t end, Fiber::State s) {
  bool any = false;
  for (size_t i = begin; i < end; ++i) {
    if (b.fibers[i].state == s) any = true;
    else if (b.fibers[i].state != Fiber::kDone) return false;
  }
  for (size_t i = begin; i < end && any; ++i)
    if (b.fibers[i].state == s) b.fibers[i].state = Fiber::kRunnable;
  return any;
}

// Runs one block of `body` to its end; false where its threads wait at barriers none can leave.
inline bool run_block(Block& b, const std::function<void()>& body) {
  const size_t n = size_t{block_dim.x} * block_dim.y * block_dim.z;
  if (!b.stacks) b.stacks.reset(new char[n * kStackBytes]);  // once per launch: every block has n threads
  b.fibers.assign(n, Fiber{});
  b.slots.assign(n, 0.0f);
  b.body = &body;
  for (size_t i = 0; i < n; ++i) {  // in place: a ucontext_t must not move after getcontext
    Fiber& f = b.fibers[i];
    f.index = dim3(i % block_dim.x, i / block_dim.x % block_dim.y, i / (size_t{block_dim.x} * block_dim.y));
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = b.stacks.get() + i * kStackBytes;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &b.scheduler;
    makecontext(&f.context, fiber_main, 0);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937 rng(static_cast<unsigned>(block_index.x * 7919 + block_index.y));
  for (;;) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      if (b.fibers[i].state != Fiber::kRunnable) continue;
      b.current = i;
      thread_index = b.fibers[i].index;
      swapcontext(&b.scheduler, &b.fibers[i].context);
    }
    bool released = release(b, 0, n, Fiber::kAtBlockBarrier);
    for (size_t w = 0; w < n; w += 32) released |= release(b, w, std::min(n, w + 32), Fiber::kAtWarpBarrier);
    if (released) continue;
    return std::all_of(b.fibers.begin(), b.fibers.end(), [](const Fiber& f) { return f.state == Fiber::kDone; });
  }
}

// kernel<<<grid, block>>>(args...): each block in turn, x fastest.
template <typename... Params>
struct Launch {
  dim3 grid, block;
  void (*kernel)(Params...);
  template <typename... Args>
  void operator()(Args&&... args) const {
    const size_t threads = size_t{block.x} * block.y * block.z;
    if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
        grid.z > 65535) {
      last_error = cudaErrorInvalidConfiguration;
      return;
    }
    const std::tuple<Params...> params(std::forward<Args>(args)...);
    const std::function<void()> body = [&] { std::apply(kernel, params); };
    Block b;
    running = &b;
    grid_dim = grid, block_dim = block;
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          block_index = dim3(x, y, z);
          if (!run_block(b, body)) {
            last_error = cudaErrorLaunchFailure;
            running = nullptr;
            return;
          }
        }
    running = nullptr;
  }
};
template <typename... Params>
Launch<Params...> launch(dim3 grid, dim3 block, cudaStream_t, void (*kernel)(Params...)) {
  return {grid, block, kernel};
}

}  // namespace slm::cuda_on_cpu

#define threadIdx (::slm::cuda_on_cpu::thread_index)
#define blockIdx (::slm::cuda_on_cpu::block_index)
#define blockDim (::slm::cuda_on_cpu::block_dim)
#define gridDim (::slm::cuda_on_cpu::grid_dim)
#define SLM_LAUNCH(grid, block, stream, ...) ::slm::cuda_on_cpu::launch(grid, block, stream, __VA_ARGS__)

inline void __syncthreads() { slm::cuda_on_cpu::wait_at(slm::cuda_on_cpu::Fiber::kAtBlockBarrier); }

// v of the lane `lane_mask` away (xor) in this thread's warp; all 32 lanes take part.
inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
  using namespace slm::cuda_on_cpu;
  Block& b = *running;
  const size_t me = b.current, partner = (me & ~size_t{31}) | ((me & 31) ^ static_cast<size_t>(lane_mask));
  b.slots[me] = v;
  wait_at(Fiber::kAtWarpBarrier);
  const float theirs = partner < b.slots.size() ? b.slots[partner] : v;
  wait_at(Fiber::kAtWarpBarrier);  // nobody writes a slot before every lane has read
  return theirs;
}

inline cudaError_t cudaGetLastError() {
  const cudaError_t e = slm::cuda_on_cpu::last_error;
  slm::cuda_on_cpu::last_error = cudaSuccess;
  return e;
}
