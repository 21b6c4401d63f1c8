// util/threads.h: the one parallel loop the CPU-side pipelines use (word counting, encoding).
// Owns: parallel_for and default_threads. Work items are handed out dynamically; the first
// exception thrown by any item is rethrown on the calling thread after all workers stop.
#pragma once
#include <cstdint>
#include <functional>

namespace slm {

int default_threads();  // hardware concurrency, at least 1

// Calls fn(i, worker) for i in [0, n) on up to `threads` workers; worker is in [0, threads).
void parallel_for(int64_t n, int threads, const std::function<void(int64_t i, int worker)>& fn);

}  // namespace slm
