// host/precision_probe.h: which precision is faster for this step on this CPU, measured.
// Owns: time_precisions: one transformer block and the head + loss, forward and backward, at the
// run's micro-batch and sequence length, in fp32 and in bf16 autocast (a second or two; bf16 a
// single run where that is already far slower), cached in ~/.cache/slmtrain/precision.json keyed
// by CPU model, threads and shape where the process had its threads' time (host/cpu_share.h).
// precision.cpp's "auto" decides by it. Also best_time, the timing rule it uses.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "model/gpt2.h"

namespace slm::host {

struct PrecisionTiming {
  double fp32_s = 0, bf16_s = 0;  // one block + head, forward and backward
  int64_t micro_batch = 0;        // the batch it was timed at (at most 4 sequences)
  std::string source = "measured now";  // "cached", or why it was not kept (host/cpu_share.h)
};

// f's best time of three runs after a warm-up run, or the warm-up's own time where that took longer
// than `enough` seconds (the answer is then settled: far slower than the other precision).
constexpr double kNoLimit = 1e30;
double best_time(const std::function<void()>& f, double enough);

// The micro-batch the probe times for a run's micro-batch: at most 4 sequences.
int64_t probe_micro_batch(int64_t micro_batch);
PrecisionTiming time_precisions(const model::GPT2Config& m, int64_t micro_batch, int64_t seq_len);

}  // namespace slm::host
