// train/step_report.h: what one step reports once every rank has agreed on it: its line in
// metrics.jsonl (loss, speed, MFU, bubble, bytes per link type, memory, cost), the progress line,
// the check of the measured step against the planner's prediction (parallel.plan = "auto"), a
// warning where the steps run above the device's peak (an MFU over 100%: the peak measured low), and
// the count of non-finite losses in a row that stops a diverged run.
// Owns: StepReport.
#pragma once
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "host/hardware.h"
#include "train/agreement.h"
#include "train/run_log.h"
#include "train/trainer.h"

namespace slm::train {

struct StepReport {
  StepReport(const Trainer& t, RunLog& log, const host::DeviceInfo& dev);
  // Step `l` as this rank measured it, `g` as the world agreed; `all` is its block's agreement
  // (of `block` steps).
  void operator()(const LocalStep& l, const AgreedStep& g, const Agreed& all, size_t block);

  const Trainer& t;
  RunLog& log;
  host::DeviceInfo dev;
  int devices;
  double flops_per_device;  // the global step's FLOPs over the devices
  double bubble_theory;     // the pipeline schedule's idle share on paper
  int64_t first;            // the step this session started from
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  double spent_usd = 0, first_loss = -1;
  std::vector<double> step_times, mfus;  // of the warm-up step and three more, for their checks
  int64_t diverged = 0;  // agreed losses in a row that are not finite

 private:
  nlohmann::json metrics_line(const LocalStep& l, const AgreedStep& g, const Agreed& all, size_t block,
                              const StepStats& s, double step_s, double step_flop) const;
  void check_after_warmup();
  void print_progress(int64_t step, const StepStats& s, double step_s, double step_flop) const;
};

}  // namespace slm::train
