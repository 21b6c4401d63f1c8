// train/profiler.h: log.profile_steps: LibTorch's profiler over a few training steps, the operators
// on the CPU and, on a GPU, every kernel, copy and memset with its stream, written as a Chrome trace
// (Perfetto, chrome://tracing; report/profile.h sums it up). The same file in both LibTorch builds
// (1.13 cannot save its own traces). Owns: profile_window, start_profiler, stop_profiler.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace slm::train {

// The steps a session from step `first` to `end` profiles, as (after, last): steps after+1..last.
// The first three are left out where the session is long enough (the attention kernel's measurement,
// the allocator's first blocks, a CUDA graph's capture); `n` steps at most. (0, 0) where n is 0.
std::pair<int64_t, int64_t> profile_window(int64_t first, int64_t end, int64_t n);

// Starts recording this thread's operators (and the autograd threads it starts), and the GPU's
// activities where `cuda`.
void start_profiler(bool cuda);
// Stops it; returns the recorded events as a Chrome trace whose "slm_profile" says
// {"source": source, "steps": steps}.
nlohmann::json stop_profiler(const std::string& source, int64_t steps);

}  // namespace slm::train
