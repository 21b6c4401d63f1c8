// train/loop.h: a whole training run around train_step: the "once in a while" work.
// Owns: run_training (setup or resume, the step loop, validation, metrics JSONL, progress
// lines, checkpoints every N steps or minutes, at the end and on SIGINT/SIGTERM; after a launcher's
// restart, resume and record it in RUN/events.jsonl). After each step every rank
// agrees on the global loss, a stop request and the metrics in one small all-reduce; under DiLoCo
// it travels while the next step trains (reported one step late, so no step waits for the link).
#pragma once
#include "train/config.h"

namespace slm::train {

// Trains until schedule.max_steps, or until step `stop_at` when 0 < stop_at < max_steps (then
// checkpoints and returns: the next run with resume continues the same schedule). Returns the
// exit code: 0, or 130 / 143 when stopped by SIGINT / SIGTERM (after saving a checkpoint).
// UserError for bad settings or data.
int run_training(const Config& cfg, bool resume, int64_t stop_at = 0);

}  // namespace slm::train
