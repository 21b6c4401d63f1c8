// train/agreement.h: what every rank learns about its steps: one small world all-reduce per block
// of steps, sent while the next block trains, and how many steps a block holds.
//
// The sum carries the global mean loss (the sum of the ranks' shares), whether any rank was asked
// to stop (so that all stop and save after the same step), whether rank 0's clock says a checkpoint
// is due (checkpoint.every_minutes), how many ranks have written the background checkpoint in
// flight (checkpoint.async), and for the metrics: mean step, compute, schedule and wait times, bytes
// sent per link type, and each rank's peak memory. Every rank sees the same sums after the same
// step, so decisions taken from them (stop, save, the next block's size) agree without more talk.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/collectives.h"
#include "train/trainer.h"

namespace slm::train {

// Bytes this rank has sent so far, per link type.
struct ByteCounts {
  int64_t pp = 0, tp = 0, dp = 0, outer = 0;
};
ByteCounts byte_counts(const Trainer& t);
ByteCounts sent_since(const Trainer& t, const ByteCounts& before);

// One step as this rank measured it.
struct LocalStep {
  StepStats s;
  int64_t step = 0;
  double time = 0;     // unix time at the end of the step
  ByteCounts sent;     // during the step
  double wait_s = 0;   // blocked after the step for an earlier block's agreement
  bool paced = false;  // that wait was a block's regular turn (not the flush before an evaluation or save)
};

// One step as the world agreed on it.
struct AgreedStep {
  double loss = 0;                                      // global mean
  double step_s = 0, compute_s = 0, schedule_s = 0;     // means over ranks
  double wait_s = 0, paced_wait_s = 0;                  // means over ranks
  double bytes_pp = 0, bytes_tp = 0, bytes_dp = 0, bytes_outer = 0;  // all ranks together
};

// One block as the world agreed on it.
struct Agreed {
  bool stop = false;  // a rank was asked to stop (signal)
  bool save = false;  // checkpoint.every_minutes passed on rank 0
  double ckpt_written = 0, ckpt_failed = 0;  // checkpoint.async: ranks done writing the one in flight
  std::vector<AgreedStep> steps;             // in the block's order
  std::vector<double> peak_mem;              // per rank, bytes, at the block's end
};

// A block's all-reduce in flight, with what its steps measured here.
struct Agreement {
  comm::PendingSum sum;
  std::vector<LocalStep> steps;
  int n = 1;  // ranks
};

// Starts the block's sum over `world` (every rank calls it after the same step with as many steps).
// `ckpt` = {written, failed} of the background checkpoint on this rank.
Agreement begin_agree(std::vector<LocalStep> steps, bool stop, bool save_due, const std::vector<double>& ckpt,
                      const comm::Group& world);
// Waits for the sum.
Agreed finish_agree(Agreement& a);

// The most steps one agreement covers: bounds how late a signal's stop and the metrics come.
constexpr int64_t kMaxStepsPerAgreement = 64;
// Steps per block needed after a block of `block` steps that took `step_s` each (the world's mean)
// and whose ranks waited `paced_wait_s` in all, on average, at the block's regular turn, for the
// agreement before it. That agreement was awaited once this block was full, so it had `block`
// steps to arrive; where the ranks still waited more than 5% of that, the next blocks cover the
// whole latency (block steps + the wait) with a quarter to spare. Never below `block`, at most
// kMaxStepsPerAgreement. (The loop never shrinks its blocks: it keeps the larger of this and the
// size it has.)
int64_t steps_per_agreement(int64_t block, double step_s, double paced_wait_s);

}  // namespace slm::train
