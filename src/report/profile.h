// report/profile.h: what a profiled step spent its time on, from a Chrome trace of LibTorch's
// profiler: slm's own (log.profile_steps: RUN/profile/rank_K.json, train/profiler.h) or PyTorch's
// (torch.profiler's export_chrome_trace), read alike, so that the two can be set side by side.
// With GPU kernels in the trace: the GPU's busy time against the wall time, and the kernels' time
// by kind (matmul, attention, layer norm, ...); without: the CPU operators' self time.
// Owns: kernel_kind, ProfileSummary, summarize_profile, read_profile, profile_files, profile_table,
// profile_comparison, profile_line.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace slm::report {

// The kind of a GPU activity from its trace category ("kernel", "gpu_memcpy", "gpu_memset") and
// its name: "matmul", "attention", "layer norm", "gelu", "softmax / cross-entropy", "optimizer",
// "gradient norm", "embedding", "reduction", "copy / cast / fill", "elementwise", "fused
// (triton)" or "other".
std::string kernel_kind(const std::string& category, const std::string& name);

struct ProfileRow {
  std::string name;
  double ms = 0;      // the profile's total
  int64_t count = 0;  // kernels or calls
};

struct ProfileSummary {
  std::string source;   // what profiled: "slm rank 0, steps 4-5", "PyTorch eager"
  int64_t steps = 1;    // steps the profile covers (the trace's slm_profile.steps; 1 where absent)
  double wall_ms = 0;   // the first event's start to the last one's end
  bool gpu = false;     // GPU activities were recorded
  double gpu_busy_ms = 0;          // the union of the GPU activities' intervals
  std::vector<ProfileRow> kinds;   // GPU: time by kernel_kind; CPU: by operator, self time; largest first
  std::vector<ProfileRow> top;     // GPU: the largest kernels by name; CPU: empty
};

// The summary of a Chrome trace (its "traceEvents"); `fallback_source` names it where the trace does not.
ProfileSummary summarize_profile(const nlohmann::json& trace, const std::string& fallback_source);
// The summary of a trace file; UserError (one line) where it is not a profiler's trace.
ProfileSummary read_profile(const std::string& path);
// RUN/profile/rank_K.json, by rank (empty where the run profiled nothing).
std::vector<std::string> profile_files(const std::string& run_dir);
// Markdown: one line of totals per step, then the table by kind (at most `rows` rows and the
// rest as one) and, with GPU kernels, the largest ones.
std::string profile_table(const ProfileSummary& s, size_t rows = 12);
// Markdown: several profiles side by side (slm's beside PyTorch's), ms per step: the wall time, the
// GPU's busy time (with GPU kernels) and each kind (the operators, without), in the first
// profile's order, at most `rows` rows and the rest as one.
std::string profile_comparison(const std::vector<ProfileSummary>& profiles, size_t rows = 14);
// One line for the training log: the totals and the three largest kinds.
std::string profile_line(const ProfileSummary& s);

}  // namespace slm::report
