// model/kernel_threads.cpp: see kernel_threads.h.
#include "model/kernel_threads.h"

#include <ATen/Parallel.h>

#include <mutex>
#include <set>
#include <thread>

namespace slm::model {

int kernel_threads() {
  std::mutex m;
  std::set<std::thread::id> ids;
  at::parallel_for(0, 4096, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  return static_cast<int>(ids.size());
}

}  // namespace slm::model
