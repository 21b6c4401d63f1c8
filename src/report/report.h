// report/report.h: `slm report`: a run's metrics as a summary table and plots.
// Owns: RunSummary, summarize (metrics.jsonl -> numbers; for steps logged twice, e.g. after a
// resume, the last record wins; restarts from events.jsonl) and write_report (SVG + PNG plots through gnuplot, summary.md).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "train/events.h"

namespace slm::report {

// metrics.jsonl's key of a mixed dataset's validation loss (data.mix): "val_loss/DIR".
inline constexpr std::string_view kMixValKey = "val_loss/";

struct RunSummary {
  int64_t steps = 0, tokens = 0;
  double first_loss = 0, final_loss = 0;  // train loss: mean of the first / last 10 steps
  double best_val_loss = -1, best_val_ppl = -1;
  int64_t best_val_step = -1, last_val_step = -1;
  std::vector<std::pair<std::string, double>> last_mix_val;  // data.mix: each dataset's loss at the last validation
  double median_tokens_per_s = 0, median_tflops = 0, median_mfu = 0;
  double train_seconds = 0, cost_usd = 0;
  // Per step: `step_s` (the step's own work), and the wall time from one step's end to the next
  // (consecutive steps only): more than step_s where the ranks wait between steps.
  double median_step_s = 0, median_wall_step_s = 0;
  int64_t peak_mem_bytes = 0;
  std::vector<train::RestartEvent> restarts;  // RUN/events.jsonl
  std::vector<std::string> launcher_events;   // the same file: failed restarts, giving up (in words)
};

RunSummary summarize(const std::string& run_dir);  // UserError if metrics.jsonl is missing/empty
std::string summary_table(const RunSummary& s);      // Markdown
// Writes RUN/report/{loss,throughput}.{svg,png} and summary.md; returns the report directory.
// Without gnuplot: UserError, or where no_plots is given, summary.md alone and why in *no_plots.
std::string write_report(const std::string& run_dir, std::string* no_plots = nullptr);

}  // namespace slm::report
