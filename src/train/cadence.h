// train/cadence.h: what is due after a step, decided once for that step: a validation, a
// checkpoint, the schedule's end. Owns: Due, due_after, stopped_exit_code. Used by training's loop
// and by `slm embed tune`.
#pragma once
#include <csignal>
#include <cstdint>

#include "util/interrupt.h"

namespace slm::train {

struct Due {
  bool eval = false;  // a validation (eval.every, and the last step)
  bool save = false;  // a checkpoint (checkpoint.every, and the session's last step)
  bool last = false;  // the schedule's last step
};

// After step `step` of a session that ends at `end` (--stop-at, or max_steps) of a schedule of
// `max_steps`; an `every` of 0 is never.
inline Due due_after(int64_t step, int64_t end, int64_t max_steps, int64_t eval_every, int64_t save_every) {
  Due d;
  d.last = step == max_steps;
  d.eval = eval_every > 0 && (step % eval_every == 0 || d.last);
  d.save = (save_every > 0 && step % save_every == 0) || step == end;
  return d;
}

// The exit code of a run stopped by a signal (after it saved): 130 for SIGINT, else 143.
inline int stopped_exit_code() { return interrupt_signal() == SIGINT ? 130 : 143; }

}  // namespace slm::train
