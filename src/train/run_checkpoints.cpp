// train/run_checkpoints.cpp: see run_checkpoints.h.
#include "train/run_checkpoints.h"

#include <fmt/format.h>

#include "comm/collectives.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace slm::train {

bool RunCheckpoints::ask() {
  const double minutes = t.cfg.checkpoint.every_minutes;
  if (asked || !log.main || minutes <= 0) return false;
  asked = std::chrono::duration<double>(Clock::now() - last_save).count() >= 60 * minutes;
  return asked;
}

void RunCheckpoints::on_agreed(const Agreed& all) {
  by_time = by_time || all.save;
  if (const auto path = train::on_agreed(async, all.ckpt_written, all.ckpt_failed, t.groups.world.size))
    log.say(fmt::format("checkpoint {} (written in the background since step {})", *path, async_step));
}

void RunCheckpoints::save(bool final, int64_t diverged) {
  std::vector<double> bad{parallel::param_shard(*t.dp).isfinite().all().item<bool>() ? 0.0 : 1.0};
  last_save = Clock::now();
  by_time = asked = false;
  if (diverged == 0 && comm::sum(bad, t.groups.world)[0] == 0) {
    const auto t0 = Clock::now();
    if (const auto path = wait_async(async, t))  // at most one in flight
      log.say(fmt::format("checkpoint {} (written in the background since step {})", *path, async_step));
    if (t.cfg.checkpoint.async && !final) {
      start_async(async, t, run, t.cfg.checkpoint.keep);
      async_step = t.step;
    } else {
      log.say("checkpoint " + save_checkpoint(t, run, t.cfg.checkpoint.keep));
    }
    // What the save cost the training thread (the step's time does not include it).
    log.write({{"step", t.step}, {"checkpoint_s", std::chrono::duration<double>(Clock::now() - t0).count()},
               {"checkpoint_async", t.cfg.checkpoint.async && !final}});
    return;
  }
  const std::string what = fmt::format("step {}: loss or weights not finite (training diverged)", t.step);
  if (final) throw UserError(what + "; no checkpoint written, the last finite one is kept");
  log.say(what + ", checkpoint not written");
}

void RunCheckpoints::keep_alone() {
  if (log.main && parallel::zero_stage(*t.dp) == 0 && t.groups.tp.size == 1 && t.pipe->plan.stages.size() == 1 &&
      !t.outer)
    std::fprintf(stderr, "checkpoint %s (saved by rank 0 alone after losing a peer)\n",
                 save_checkpoint(t, run, t.cfg.checkpoint.keep, /*solo=*/true).c_str());
}

}  // namespace slm::train
