// model/kernel_threads.h: how many threads slm's own CPU kernels get. at::parallel_for opens its
// OpenMP region inline in the calling file, so a file built without -fopenmp runs every kernel on
// one thread, silently (it did until 2026-11-27: CMakeLists.txt). Checked by a test and by
// `slm doctor`.
#pragma once

namespace slm::model {

// The distinct threads that ran parts of one at::parallel_for over a few thousand items, as the
// kernels call it (compiled like them).
int kernel_threads();

}  // namespace slm::model
