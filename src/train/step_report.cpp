// train/step_report.cpp: see step_report.h.
#include "train/step_report.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "parallel/pipeline/schedule.h"
#include "util/progress.h"

namespace slm::train {

StepReport::StepReport(const Trainer& t_, RunLog& log_, const host::DeviceInfo& dev_)
    : t(t_), log(log_), dev(dev_), devices(t_.groups.world.size),
      flops_per_device(step_flops(t_.cfg.model, t_.cfg.batch.batch_size, t_.seq_len) / t_.groups.world.size),
      bubble_theory(parallel::pipeline::theoretical_bubble(t_.pipe->plan.pp,
                                                           static_cast<int>(t_.pipe->plan.micro_batches),
                                                           t_.pipe->plan.virtual_stages)),
      first(t_.step) {}

void StepReport::operator()(const LocalStep& l, const AgreedStep& g, const Agreed& all, size_t block) {
  StepStats s = l.s;
  s.loss = g.loss;
  diverged = std::isfinite(s.loss) ? 0 : diverged + 1;
  const double step_s = step_seconds(s);
  // sync.by = "time": faster sites take more inner steps, so a step may hold more than one global batch.
  const double step_flop = flops_per_device * static_cast<double>(s.tokens) /
                           static_cast<double>(t.cfg.batch.batch_size * t.seq_len);
  spent_usd += step_s / 3600.0 * dev.price_per_hour * devices;  // this session's steps
  if (first_loss < 0) first_loss = s.loss;
  log.write(metrics_line(l, g, all, block, s, step_s, step_flop));
  if (step_times.size() < 4) {  // the warm-up step and three more, checked once
    step_times.push_back(step_s);
    mfus.push_back(step_flop / step_s / dev.peak_flops);
    if (step_times.size() == 4) check_after_warmup();
  }
  if (s.loss_scale > 0) log.write({{"step", l.step}, {"loss_scale", s.loss_scale}, {"skipped", s.skipped}});
  if (s.skipped)
    log.say(fmt::format("step {}: gradients not finite, update skipped{}", l.step,
                        s.loss_scale > 0 ? fmt::format(" (loss scale {} -> {})", s.loss_scale, s.next_scale) : ""));
  print_progress(l.step, s, step_s, step_flop);
}

nlohmann::json StepReport::metrics_line(const LocalStep& l, const AgreedStep& g, const Agreed& all, size_t block,
                                        const StepStats& s, double step_s, double step_flop) const {
  const double hour_usd = step_s / 3600.0 * dev.price_per_hour * devices;
  nlohmann::json j = {{"step", l.step}, {"time", l.time}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
      {"tokens", s.tokens}, {"tokens_per_s", s.tokens / step_s}, {"step_s", step_s},
      {"data_s", s.data_s}, {"compute_s", s.compute_s}, {"schedule_s", s.schedule_s},
      {"optim_s", s.optim_s}, {"comm_s", s.comm_s}, {"tflops_per_device", step_flop / step_s / 1e12},
      {"bubble", g.schedule_s > 0 ? 1.0 - g.compute_s / g.schedule_s : 0.0},
      {"bubble_theory", bubble_theory}, {"bytes_pp", g.bytes_pp}, {"bytes_tp", g.bytes_tp},
      {"bytes_dp", g.bytes_dp}, {"bytes_outer", g.bytes_outer}, {"peak_mem_per_rank", all.peak_mem},
      {"agree_steps", block}, {"agree_wait_s", g.wait_s},
      {"mfu", step_flop / step_s / dev.peak_flops}, {"peak_mem_bytes", host::peak_memory_bytes()},
      {"gpu_peak_mem_bytes", host::gpu_peak_memory_bytes()},
      {"cost_usd", spent_usd},
      {"tokens_per_usd", s.tokens / hour_usd},
      {"loss_drop_per_usd", (first_loss - s.loss) / spent_usd}};
  if (t.predicted_step_s > 0) j["predicted_step_s"] = t.predicted_step_s;  // parallel.plan = auto
  if (t.outer) j["outer_s"] = s.outer_s, j["outer_merged"] = s.outer_merged;
  return j;
}

// The median of the three steps after the warm-up step.
static double median_after_first(std::vector<double> v) {
  std::sort(v.begin() + 1, v.end());
  return v[2];
}

// Their step time against the planner's prediction (parallel.plan = "auto"), and their MFU: above
// 100% the peak is low (measured at a busy moment, or system.peak_tflops set below the device's).
void StepReport::check_after_warmup() {
  const double step_s = median_after_first(step_times), mfu = median_after_first(mfus);
  if (t.predicted_step_s > 0 && std::abs(step_s / t.predicted_step_s - 1) > 0.25)
    log.say(fmt::format("warning: steps take {:.3f} s, {:+.0f}% off the planner's prediction of {:.3f} s (the "
                        "profile or the links may have changed: `slm profile`, `slm probe`)",
                        step_s, 100 * (step_s / t.predicted_step_s - 1), t.predicted_step_s));
  if (mfu > 1)
    log.say(fmt::format("warning: MFU {:.0f}%: the steps run faster than the peak of {:.3f} TFLOP/s ({}) allows; {}",
                        100 * mfu, dev.peak_flops / 1e12, dev.peak_source,
                        dev.peak_source == "configured" ? "system.peak_tflops is set too low"
                                                        : "it was measured low: `slm doctor` measures it again"));
}

void StepReport::print_progress(int64_t step, const StepStats& s, double step_s, double step_flop) const {
  const int64_t max_steps = t.cfg.schedule.max_steps;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double eta = elapsed / static_cast<double>(step - first) * static_cast<double>(max_steps - step);
  log.progress(fmt::format("step {}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | {:.3f} TFLOP/s "
                           "| MFU {:.1f}% | ${:.4f} | eta {}",
                           step, max_steps, s.loss, s.lr, s.tokens / step_s, step_flop / step_s / 1e12,
                           100 * step_flop / step_s / dev.peak_flops, spent_usd, format_duration(eta)),
               step % t.cfg.log.every == 0 || step == first + 1);
}

}  // namespace slm::train
