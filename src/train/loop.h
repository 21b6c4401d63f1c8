// train/loop.h: a whole training run around train_step: the "once in a while" work.
// Owns: run_training: set up (setup.cpp) or resume, then the step loop, read top to bottom in
// loop.cpp: the training step (fenced by the trace and the profiler), the steps' agreement in blocks (every rank
// learns the global loss, a stop request and the metrics in one small all-reduce that travels
// while the next block trains, agreement.h), what is due after the step (cadence.h: validation,
// a checkpoint), and the named parts that do it: the step's report (step_report.h), checkpoints
// every N steps or minutes, at the end and on SIGINT/SIGTERM (run_checkpoints.h), and the run's
// outputs (run_log.h: metrics.jsonl, TensorBoard, progress lines). After a launcher's restart it
// resumes and records it in RUN/events.jsonl.
#pragma once
#include "train/config.h"

namespace slm::train {

// Trains until schedule.max_steps, or until step `stop_at` when 0 < stop_at < max_steps (then
// checkpoints and returns: the next run with resume continues the same schedule). Returns the
// exit code: 0, or 130 / 143 when stopped by SIGINT / SIGTERM (after saving a checkpoint).
// UserError for bad settings or data.
int run_training(const Config& cfg, bool resume, int64_t stop_at = 0);

}  // namespace slm::train
