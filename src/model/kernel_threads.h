// model/kernel_threads.h: how many threads slm's own CPU kernels get, and their revision.
// at::parallel_for opens its OpenMP region inline in the calling file, so a file built without
// -fopenmp runs every kernel on one thread, silently (it did until 2026-11-27: CMakeLists.txt).
// Checked by a test and by `slm doctor`.
#pragma once

namespace slm::model {

// Bumped whenever the own kernels change speed: cached measurements (GEMM peaks, the precision
// probe, the planner's profile) name it (host::measurement_context), so they are taken again.
// 2: every thread, attention in query blocks (2026-11-27). 3: the CUDA kernels for the residual
// add + LayerNorm and the bias + GELU (2026-11-28). 4: the residual add + LayerNorm on the CPU
// (2026-12-06). 5: the bias + GELU on the CPU (2026-12-06). 6: the kernels on AVX2 CPUs (fp32;
// 2026-12-07).
constexpr int kKernelsRevision = 6;

// The distinct threads that ran parts of one at::parallel_for over a few thousand items, as the
// kernels call it (compiled like them).
int kernel_threads();

}  // namespace slm::model
