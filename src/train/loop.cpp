// train/loop.cpp: see loop.h.
#include "train/loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <torch/cuda.h>

#include "comm/collectives.h"
#include "comm/hierarchy.h"
#include "comm/launch_record.h"
#include "report/tensorboard.h"
#include "train/agreement.h"
#include "train/async_checkpoint.h"
#include "train/checkpoint.h"
#include "train/events.h"
#include "train/hardware.h"
#include "train/machine.h"
#include "train/runtime.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/progress.h"
#include "util/trace.h"

namespace slm::train {
namespace fs = std::filesystem;

namespace {

// Appends one JSON object per line and flushes, so a killed run keeps its metrics.
struct MetricsLog {
  FILE* f;
  explicit MetricsLog(const std::string& path) : f(std::fopen(path.c_str(), "a")) {
    if (!f) throw UserError(path + ": cannot open for writing");
  }
  ~MetricsLog() { std::fclose(f); }
  void write(const nlohmann::json& j) {
    std::fprintf(f, "%s\n", j.dump().c_str());
    std::fflush(f);
  }
};

// One metrics.jsonl record's numbers as TensorBoard scalars of its step.
void write_curves(report::TensorBoardWriter& board, const nlohmann::json& j) {
  std::vector<std::pair<std::string, float>> values;
  for (const auto& [field, v] : j.items())
    if (const std::string tag = report::tensorboard_tag(field); !tag.empty() && v.is_number())
      values.emplace_back(tag, v.get<float>());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  board.scalars(j.value("step", int64_t{0}), j.contains("time") ? j["time"].get<double>() : now, values);
}

}  // namespace

// log.trace_steps: this rank's timeline of the traced steps, in RUN/trace/rank_K.json.
static void write_trace(const Trainer& t, const std::string& run) {
  const parallel::RankRole& r = t.pipe->role;
  const int rank = t.world.world.rank;
  const std::string name = fmt::format("rank {}: pipeline rank {}, replica {}, tp rank {}", rank, r.pipe, r.replica, r.tp_rank);
  fs::create_directories(run + "/trace");
  write_file_atomic(fmt::format("{}/trace/rank_{}.json", run, rank),
                    trace::trace_file_json(trace::take_events(rank), rank, name));
}

static void print_header(const Trainer& t, const std::string& run, const DeviceInfo& dev) {
  const Config& cfg = t.cfg;
  std::fprintf(stderr,
               "train: %lld parameters (L=%lld C=%lld H=%lld T=%lld V=%lld), %s %s (%s), %d threads, "
               "batch %lld x %lld tokens (micro %lld), steps %lld..%lld -> %s\n",
               static_cast<long long>(t.num_params),
               static_cast<long long>(cfg.model.n_layer), static_cast<long long>(cfg.model.n_embd),
               static_cast<long long>(cfg.model.n_head), static_cast<long long>(t.seq_len),
               static_cast<long long>(cfg.model.vocab_size), t.device.c_str(), t.precision.c_str(),
               t.precision_reason.c_str(), cpu_threads(), static_cast<long long>(cfg.batch.batch_size),
               static_cast<long long>(t.seq_len), static_cast<long long>(cfg.batch.micro_batch),
               static_cast<long long>(t.step), static_cast<long long>(cfg.schedule.max_steps), run.c_str());
  const double mb = 1024.0 * 1024.0;
  std::fprintf(stderr,
               "parallel: %d ranks (%s, %s), pipeline x%d, data parallel x%d, tensor parallel x%d, ZeRO %lld, "
               "buckets %.0f MiB; rank 0 holds: parameters %.1f MiB, gradients %.1f MiB, optimizer %.1f MiB\n",
               t.groups.world.size, t.world.env.source.c_str(), t.world.backend.c_str(), t.pipe->plan.pp,
               t.groups.dp.size, t.groups.tp.size,
               static_cast<long long>(parallel::zero_stage(*t.dp)), cfg.parallel.bucket_mb,
               parallel::param_bytes(*t.dp) / mb, parallel::grad_bytes(*t.dp) / mb,
               (t.adam.exp_avg.numel() * 2 + t.adam.scratch.numel()) * 4 / mb);
  if (parallel::zero_group(*t.dp).size < t.groups.dp.size)
    std::fprintf(stderr, "ZeRO state: split over the %d ranks of each site, replicated across sites\n",
                 parallel::zero_group(*t.dp).size);
  if (t.outer) std::fprintf(stderr, "sync: %s\n", parallel::describe(*t.outer).c_str());
  if (const std::string wan = comm::describe_wan(t.groups.dp); !wan.empty())
    std::fprintf(stderr, "data-parallel gradients: %s\n", wan.c_str());
  if (t.pipe->plan.stages.size() > 1 || t.pipe->plan.dp > 1 || t.groups.tp.size > 1)
    std::fprintf(stderr, "%s", parallel::describe_plan(t.pipe->plan, model_shape(cfg.model), t.seq_len).c_str());
  const MachineFacts machine = machine_facts();
  std::fprintf(stderr, "machine: %s\n", describe_machine(machine).c_str());  // as `slm doctor` shows it
  if (const BlasWarning w = blas_warning(machine.blas); !w.problem.empty() && t.device == "cpu")
    std::fprintf(stderr, "warning: %s (fix: %s)\n", w.problem.c_str(), w.fix.c_str());
  std::fprintf(stderr, "device: %s, peak %.3f TFLOP/s %s (%s), $%.3f/hour (%s)\n", dev.name.c_str(),
               dev.peak_flops / 1e12, t.precision.c_str(), dev.peak_source.c_str(), dev.price_per_hour,
               dev.price_source.c_str());
}

// After a restart: one line in RUN/events.jsonl and in the log.
static void record_restart(const Trainer& t, const std::string& run, const std::optional<std::string>& ckpt) {
  RestartEvent e;
  const auto [last_step, last_time] = last_logged_step(run);
  e.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  e.restart = t.world.env.restart;
  e.cause = t.world.env.restart_cause;
  e.resumed_step = t.step;
  e.last_step = last_step;
  e.down_s = last_time > 0 ? e.time - last_time : 0;
  e.world = t.groups.world.size;
  e.layout = describe_layout(t);
  if (ckpt) e.old_layout = saved_layout(*ckpt);
  append_restart_event(run, e);
  std::fprintf(stderr, "%s\n", describe(e).c_str());
}

int run_training(const Config& cfg_in, bool resume, int64_t stop_at) {
  const std::string run = cfg_in.run.dir;
  comm::tell_launcher_run_dir(run);  // before rendezvous: a restart that fails there is recorded too
  std::unique_ptr<Trainer> t = make_trainer(cfg_in);
  if (!t) return 0;  // left out by parallel.plan = "auto"
  const Config& cfg = t->cfg;
  const bool main_rank = t->groups.world.rank == 0;
  const int devices = t->groups.world.size;
  configure_cpu_threads(cfg.system.threads, t->world.env.local_world);
  const int restart = t->world.env.restart;  // the launcher started the job again after a failure:
  resume = resume || restart > 0;           // go on from the newest checkpoint
  comm::require_same(fmt::format("resume={} stop_at={}", resume, stop_at), t->groups.world, "--resume/--stop-at");
  fs::create_directories(run);
  std::optional<std::string> ckpt = find_latest_checkpoint(run, [&](const std::string& w) {
    if (main_rank) std::fprintf(stderr, "warning: %s\n", w.c_str());
  });
  if (ckpt && !resume)
    throw UserError(fmt::format("{}: has checkpoints; pass --resume to continue it, or choose "
                                "another run.dir",
                                run));
  if (ckpt) {
    load_checkpoint(*t, *ckpt);
    if (main_rank) std::fprintf(stderr, "resumed from %s at step %lld\n", ckpt->c_str(), static_cast<long long>(t->step));
  } else if (resume && main_rank) {
    std::fprintf(stderr, "no checkpoint in %s: starting from step 0\n", run.c_str());
  }
  if (t->outer) parallel::check_same_outer(*t->outer);
  if (restart > 0 && main_rank) record_restart(*t, run, ckpt);
  std::unique_ptr<MetricsLog> metrics;
  std::unique_ptr<report::TensorBoardWriter> board;
  if (main_rank) {
    write_file_atomic(run + "/config.toml", to_toml(cfg));
    metrics = std::make_unique<MetricsLog>(run + "/metrics.jsonl");
    if (cfg.log.tensorboard) board = std::make_unique<report::TensorBoardWriter>(run);
  }
  auto log = [&](const nlohmann::json& j) {
    if (metrics) metrics->write(j);
    if (board) write_curves(*board, j);
  };
  // Per device: the global step's FLOPs are shared by the data-parallel ranks.
  const double flops = step_flops(cfg.model, cfg.batch.batch_size, t->seq_len) / devices;
  const DeviceInfo dev = describe_device(t->device, t->precision, cpu_threads(), cfg.system.peak_tflops,
                                         cfg.cost.price_per_hour);
  if (main_rank) print_header(*t, run, dev);
  const bool tty = main_rank && ::isatty(STDERR_FILENO) == 1;
  const parallel::Plan& plan = t->pipe->plan;
  const double bubble_theory =
      parallel::pipeline::theoretical_bubble(plan.pp, static_cast<int>(plan.micro_batches), plan.virtual_stages);
  double spent_usd = 0, first_loss = -1;
  std::vector<double> step_times;  // for the check against the planner's prediction
  bool prediction_checked = t->predicted_step_s <= 0;
  const int64_t first = t->step;
  auto started = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (!main_rank) return;
    if (tty) std::fprintf(stderr, "\n");
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  // A checkpoint is written only after a step whose loss is finite and when every rank's parameters
  // are finite (so the last sound one is kept); after kDivergedSteps non-finite losses in a row
  // the run stops with one line.
  constexpr int64_t kDivergedSteps = 5;
  int64_t diverged = 0;  // consecutive steps whose agreed loss is not finite
  // checkpoint.every_minutes: rank 0's clock asks (in a step's agreement), every rank saves after
  // the step at which that agreement arrives.
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_save = Clock::now();
  bool save_by_time = false, asked = false;
  auto ask_to_save = [&] {  // on rank 0, once per interval (the answer comes a block later)
    if (asked || !main_rank || cfg.checkpoint.every_minutes <= 0) return false;
    asked = std::chrono::duration<double>(Clock::now() - last_save).count() >= 60 * cfg.checkpoint.every_minutes;
    return asked;
  };
  // checkpoint.async: all saves but the last are written in the background (async_checkpoint.h).
  AsyncCheckpoint async_ckpt;
  int64_t async_step = 0;
  auto save = [&](bool final) {  // final: the run ends after this save
    std::vector<double> bad{parallel::param_shard(*t->dp).isfinite().all().item<bool>() ? 0.0 : 1.0};
    last_save = Clock::now();
    save_by_time = asked = false;
    if (diverged == 0 && comm::sum(bad, t->groups.world)[0] == 0) {
      const auto t0 = Clock::now();
      if (const auto path = wait_async(async_ckpt, *t))  // at most one in flight
        say(fmt::format("checkpoint {} (written in the background since step {})", *path, async_step));
      if (cfg.checkpoint.async && !final) {
        start_async(async_ckpt, *t, run, cfg.checkpoint.keep);
        async_step = t->step;
      } else {
        say("checkpoint " + save_checkpoint(*t, run, cfg.checkpoint.keep));
      }
      // What the save cost the training thread (the step's time does not include it).
      log({{"step", t->step}, {"checkpoint_s", std::chrono::duration<double>(Clock::now() - t0).count()},
           {"checkpoint_async", cfg.checkpoint.async && !final}});
      return;
    }
    const std::string what = fmt::format("step {}: loss or weights not finite (training diverged)", t->step);
    if (final) throw UserError(what + "; no checkpoint written, the last finite one is kept");
    say(what + ", checkpoint not written");
  };
  auto eval = [&] {
    double v = evaluate(*t);
    log({{"step", t->step}, {"val_loss", v}, {"val_ppl", std::exp(v)}});
    say(fmt::format("step {}: val loss {:.4f}, perplexity {:.2f}", t->step, v, std::exp(v)));
  };
  const int64_t end = stop_at > 0 ? std::min(stop_at, cfg.schedule.max_steps) : cfg.schedule.max_steps;
  // What one step reports once every rank has agreed on it: the metrics line, the progress line,
  // the check against the planner's prediction.
  auto report_step = [&](const LocalStep& l, const AgreedStep& g, const Agreed& all, size_t block) {
    StepStats s = l.s;
    const int64_t step = l.step;
    s.loss = g.loss;
    diverged = std::isfinite(s.loss) ? 0 : diverged + 1;
    const double step_s = step_seconds(s);
    // sync.by = "time": faster sites take more inner steps, so a step may hold more than one global batch.
    const double step_flop = flops * static_cast<double>(s.tokens) / static_cast<double>(cfg.batch.batch_size * t->seq_len);
    double tflops = step_flop / step_s / 1e12;
    spent_usd += step_s / 3600.0 * dev.price_per_hour * devices;  // this session's steps
    if (first_loss < 0) first_loss = s.loss;
    nlohmann::json line_json = {{"step", step}, {"time", l.time}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
         {"tokens", s.tokens}, {"tokens_per_s", s.tokens / step_s}, {"step_s", step_s},
         {"data_s", s.data_s}, {"compute_s", s.compute_s}, {"schedule_s", s.schedule_s},
         {"optim_s", s.optim_s}, {"comm_s", s.comm_s}, {"tflops_per_device", tflops},
         {"bubble", g.schedule_s > 0 ? 1.0 - g.compute_s / g.schedule_s : 0.0},
         {"bubble_theory", bubble_theory}, {"bytes_pp", g.bytes_pp}, {"bytes_tp", g.bytes_tp},
         {"bytes_dp", g.bytes_dp}, {"bytes_outer", g.bytes_outer}, {"peak_mem_per_rank", all.peak_mem},
         {"agree_steps", block}, {"agree_wait_s", g.wait_s},
         {"mfu", step_flop / step_s / dev.peak_flops}, {"peak_mem_bytes", peak_memory_bytes()},
         {"gpu_peak_mem_bytes", gpu_peak_memory_bytes()},
         {"cost_usd", spent_usd},
         {"tokens_per_usd", s.tokens / (step_s / 3600.0 * dev.price_per_hour * devices)},
         {"loss_drop_per_usd", (first_loss - s.loss) / spent_usd}};
    if (t->predicted_step_s > 0) line_json["predicted_step_s"] = t->predicted_step_s;  // parallel.plan = auto
    if (t->outer) line_json["outer_s"] = s.outer_s, line_json["outer_merged"] = s.outer_merged;
    log(line_json);
    if (t->predicted_step_s > 0) {
      step_times.push_back(step_s);
      // After the first step (warm-up) and three more: the median against the planner's prediction.
      if (!prediction_checked && step_times.size() == 4) {
        prediction_checked = true;
        std::vector<double> v(step_times.begin() + 1, step_times.end());
        std::sort(v.begin(), v.end());
        const double off = v[1] / t->predicted_step_s - 1;
        if (std::abs(off) > 0.25)
          say(fmt::format("warning: steps take {:.3f} s, {:+.0f}% off the planner's prediction of {:.3f} s (the "
                          "profile or the links may have changed: `slm profile`, `slm probe`)",
                          v[1], 100 * off, t->predicted_step_s));
      }
    }
    if (s.loss_scale > 0) log({{"step", step}, {"loss_scale", s.loss_scale}, {"skipped", s.skipped}});
    if (s.skipped) say(fmt::format("step {}: gradients not finite, update skipped{}", step,
                                   s.loss_scale > 0 ? fmt::format(" (loss scale {} -> {})", s.loss_scale, s.next_scale) : ""));
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    double eta = elapsed / static_cast<double>(step - first) * static_cast<double>(cfg.schedule.max_steps - step);
    std::string line = fmt::format("step {}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | {:.3f} TFLOP/s "
                                   "| MFU {:.1f}% | ${:.4f} | eta {}",
                                   step, cfg.schedule.max_steps, s.loss, s.lr, s.tokens / step_s,
                                   tflops, 100 * step_flop / step_s / dev.peak_flops, spent_usd, format_duration(eta));
    if (tty) std::fprintf(stderr, "\r%s\033[K", line.c_str());
    else if (main_rank && (step % cfg.log.every == 0 || step == first + 1)) std::fprintf(stderr, "%s\n", line.c_str());
  };
  // Steps are agreed in blocks (agreement.h): a block's all-reduce travels while the next block
  // trains, so no step waits for it where a block lasts longer than the all-reduce's latency, and
  // the block grows until it does (a world all-reduce of a few numbers took 0.61 s at 100 ms RTT on
  // the testbed, 4 ranks, while a small model's step may take 20 ms). Every rank sees a block's sums
  // after the same step, so all stop, save and resize blocks together. Evaluations, saves, the last
  // step and a signal's stop wait for every agreement before them.
  int64_t block = 1;              // steps per agreement from now on
  std::vector<LocalStep> filling; // this block's steps, not sent yet
  std::optional<Agreement> in_flight;
  int64_t last_agreed = first;    // the last step reported
  bool stop = false;
  auto report = [&](const Agreement& a, const Agreed& all) {
    double step_s = 0, paced_wait_s = 0;
    for (size_t i = 0; i < a.steps.size(); ++i) {
      report_step(a.steps[i], all.steps[i], all, a.steps.size());
      step_s += all.steps[i].step_s / static_cast<double>(a.steps.size());
      paced_wait_s += all.steps[i].paced_wait_s;
    }
    last_agreed = a.steps.back().step;
    // The block's wait (on its last step) was for the block before, which had this block's steps to arrive.
    const int64_t lead = static_cast<int64_t>(a.steps.size());
    if (const int64_t next = std::max(block, steps_per_agreement(lead, step_s, paced_wait_s)); next != block) {
      say(fmt::format("agreement: the ranks waited {:.3f} s for the steps' all-reduce (steps of {:.3f} s); one "
                      "all-reduce per {} steps from now on", paced_wait_s, step_s, next));
      block = next;
    }
    save_by_time = save_by_time || all.save;
    if (const auto path = on_agreed(async_ckpt, all.ckpt_written, all.ckpt_failed, devices))
      say(fmt::format("checkpoint {} (written in the background since step {})", *path, async_step));
    stop = stop || all.stop;
  };
  // Waits for the block in flight and reports it; returns the seconds waited.
  auto finish_in_flight = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    Agreement a = std::move(*in_flight);
    in_flight.reset();
    const Agreed all = finish_agree(a);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report(a, all);
    return waited;
  };
  // After each step: when the block is full (or `flush`), wait for the block before it, report it,
  // and send this one; with `flush` (or a stop just agreed) wait for this one too.
  auto agree = [&](bool flush) {
    if (static_cast<int64_t>(filling.size()) < block && !flush) return;
    if (in_flight) {
      filling.back().wait_s = finish_in_flight();
      filling.back().paced = !flush;
    }
    in_flight = begin_agree(std::move(filling), interrupted(), ask_to_save(), async_status(async_ckpt),
                            t->groups.world);
    filling.clear();
    if (flush || stop) finish_in_flight();
  };
  // Plain data parallelism: every rank holds the whole state, so when a peer is lost (in the step or
  // in the evaluation or save after it) rank 0 keeps the last finished step. Not under DiLoCo: the
  // other sites' models and the outer state are not rank 0's to save.
  auto keep_alone = [&] {
    if (main_rank && parallel::zero_stage(*t->dp) == 0 && t->groups.tp.size == 1 && t->pipe->plan.stages.size() == 1 &&
        !t->outer)
      std::fprintf(stderr, "checkpoint %s (saved by rank 0 alone after losing a peer)\n",
                   save_checkpoint(*t, run, cfg.checkpoint.keep, /*solo=*/true).c_str());
  };
  if (cfg.log.trace_steps > 0 && t->device != "cpu") trace::set_sync([] { torch::cuda::synchronize(); });
  while (t->step < end) {
    const data::LoaderState before = t->train_loader->state();
    const int64_t step_before = t->step;
    try {
      const ByteCounts bytes = byte_counts(*t);
      const int64_t traced_end = first + 1 + cfg.log.trace_steps;  // the session's first step is warm-up
      trace::set_recording(t->step > first && t->step < traced_end);
      StepStats s = train_step(*t);
      trace::set_recording(false);
      if (cfg.log.trace_steps > 0 && (t->step == traced_end || (t->step < traced_end && t->step == end)))
        write_trace(*t, run);
      const double now_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      filling.push_back({s, t->step, now_unix, sent_since(*t, bytes)});
      const bool last = t->step == cfg.schedule.max_steps;
      const bool eval_due = cfg.eval.every > 0 && (t->step % cfg.eval.every == 0 || last);
      const bool save_due = (cfg.checkpoint.every > 0 && t->step % cfg.checkpoint.every == 0) || t->step == end;
      agree(eval_due || save_due || last);
      if (diverged >= kDivergedSteps)
        throw UserError(fmt::format("loss not finite at steps {}..{}: training diverged (learning rate too "
                                    "high?); the last checkpoint with a finite loss is kept",
                                    last_agreed - diverged + 1, last_agreed));
    } catch (const comm::PeerLost&) {
      if (t->step == step_before) t->train_loader->restore(before);
      keep_alone();
      throw;
    }
    const bool last = t->step == cfg.schedule.max_steps;
    try {
      if (cfg.eval.every > 0 && (t->step % cfg.eval.every == 0 || last)) eval();
      if ((cfg.checkpoint.every > 0 && t->step % cfg.checkpoint.every == 0) || t->step == end || stop || save_by_time)
        save(t->step == end || stop);
    } catch (const comm::PeerLost&) {
      keep_alone();
      throw;
    }
    if (stop && !last) {
      say(fmt::format("stopped by signal at step {}; resume with --resume", t->step));
      return interrupt_signal() == SIGINT ? 130 : 143;
    }
  }
  if (tty) std::fprintf(stderr, "\n");
  if (t->outer && t->step == cfg.schedule.max_steps)
    say(fmt::format("sync: final outer sync at step {}: the {} sites hold one model", t->step,
                    parallel::num_sites(*t->outer)));
  return 0;
}

}  // namespace slm::train
