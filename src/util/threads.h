// util/threads.h: the one parallel loop the CPU-side pipelines use (word counting, encoding).
// Owns: parallel_for, default_threads and kMaxThreads. Work items are handed out dynamically;
// the first exception thrown by any item is rethrown on the calling thread after all workers stop.
#pragma once
#include <cstdint>
#include <functional>

namespace slm {

int default_threads();  // hardware concurrency, at least 1
// The most threads a setting may ask for (system.threads, --threads): beyond any machine's cores;
// a mistyped 10^6 would otherwise start that many workers (or hang in LibTorch's pool).
constexpr int kMaxThreads = 4096;

// Calls fn(i, worker) for i in [0, n) on up to `threads` workers; worker is in [0, threads).
void parallel_for(int64_t n, int threads, const std::function<void(int64_t i, int worker)>& fn);

}  // namespace slm
