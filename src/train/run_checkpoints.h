// train/run_checkpoints.h: a run's checkpoints as its loop takes them: when (checkpoint.every
// steps, at the session's end and at a stop, and every checkpoint.every_minutes by rank 0's clock,
// asked through the steps' agreement so that every rank saves after the same step), only when
// sound (the loss and every rank's parameters finite: the last sound one is kept), in the
// background (checkpoint.async, async_checkpoint.h), and rank 0's own after a lost peer.
// Owns: RunCheckpoints.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "train/agreement.h"
#include "train/async_checkpoint.h"
#include "train/run_log.h"
#include "train/trainer.h"

namespace slm::train {

struct RunCheckpoints {
  RunCheckpoints(Trainer& t, const std::string& run, RunLog& log) : t(t), run(run), log(log) {}
  // On rank 0, once per checkpoint.every_minutes: whether to ask the ranks for a save (the answer
  // comes with the block's agreement).
  bool ask();
  // This rank's share of the agreement on the background save in flight.
  std::vector<double> status() { return async_status(async); }
  // A block's agreement: a save asked by time, a background save finished on every rank.
  void on_agreed(const Agreed& all);
  // Collective. `final`: the run ends after it (written in the foreground; a diverged run's last
  // save is an error). `diverged`: agreed non-finite losses in a row.
  void save(bool final, int64_t diverged);
  // After a lost peer, under plain data parallelism (every rank holds the whole state; not DiLoCo,
  // whose other sites' models are not rank 0's): rank 0 saves the last finished step alone.
  void keep_alone();

  Trainer& t;
  const std::string run;
  RunLog& log;
  bool by_time = false;  // the agreement said checkpoint.every_minutes has passed
 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_save = Clock::now();
  bool asked = false;
  AsyncCheckpoint async;
  int64_t async_step = 0;
};

}  // namespace slm::train
