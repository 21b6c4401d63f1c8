// train/loop.cpp: see loop.h.
#include "train/loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "data/mix.h"
#include "host/hardware.h"
#include "host/machine.h"
#include "host/runtime.h"
#include "model/own_cuda_kernels.h"
#include "report/profile.h"
#include "report/report.h"
#include "train/agreement.h"
#include "train/cadence.h"
#include "train/checkpoint.h"
#include "train/events.h"
#include "train/profiler.h"
#include "train/run_checkpoints.h"
#include "train/run_log.h"
#include "train/step_report.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/trace.h"

namespace slm::train {
namespace fs = std::filesystem;

// log.trace_steps: this rank's timeline of the traced steps, in RUN/trace/rank_K.json.
static void write_trace(const Trainer& t, const std::string& run) {
  const parallel::RankRole& r = t.pipe->role;
  const int rank = t.world.world.rank;
  const std::string name = fmt::format("rank {}: pipeline rank {}, replica {}, tp rank {}", rank, r.pipe, r.replica, r.tp_rank);
  fs::create_directories(run + "/trace");
  write_file_atomic(fmt::format("{}/trace/rank_{}.json", run, rank),
                    trace::trace_file_json(trace::take_events(rank), rank, name));
}

static void print_header(const Trainer& t, const std::string& run, const host::DeviceInfo& dev) {
  const Config& cfg = t.cfg;
  std::fprintf(stderr,
               "train: %lld parameters (L=%lld C=%lld H=%lld T=%lld V=%lld), %s %s (%s), %d threads, "
               "batch %lld x %lld tokens (micro %lld), steps %lld..%lld -> %s\n",
               static_cast<long long>(t.num_params),
               static_cast<long long>(cfg.model.n_layer), static_cast<long long>(cfg.model.n_embd),
               static_cast<long long>(cfg.model.n_head), static_cast<long long>(t.seq_len),
               static_cast<long long>(cfg.model.vocab_size), t.device.c_str(), t.precision.c_str(),
               t.precision_reason.c_str(), host::cpu_threads(), static_cast<long long>(cfg.batch.batch_size),
               static_cast<long long>(t.seq_len), static_cast<long long>(cfg.batch.micro_batch),
               static_cast<long long>(t.step), static_cast<long long>(cfg.schedule.max_steps), run.c_str());
  if (const std::vector<data::MixEntry> mix = data::parse_mix(cfg.data.mix); !mix.empty()) {
    double rest = 1;
    std::string others;
    for (const data::MixEntry& e : mix) rest -= e.share, others += fmt::format(", {} {:.1f}%", e.dir, 100 * e.share);
    std::fprintf(stderr, "data: a mix, each epoch's %lld samples from %s %.1f%%%s\n",
                 static_cast<long long>(t.train_loader->num_samples()), cfg.data.dir.c_str(), 100 * rest, others.c_str());
  }
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
  if (t.device == "cuda") std::fprintf(stderr, "cuda kernels: %s\n", model::describe_own_cuda_kernels().c_str());
  if (t.update_on_device)
    std::fprintf(stderr, "update: on the device (gradient norm, clipping, overflow skip; one host read per step)\n");
  else if (!t.update_reason.empty())
    std::fprintf(stderr, "update: on the host (%s)\n", t.update_reason.c_str());
  if (t.graph)
    std::fprintf(stderr, "cuda graphs: the whole step (forward, backward, update) is captured after %lld eager "
                 "steps, then replayed\n", static_cast<long long>(kWarmupSteps));
  else if (!t.graph_reason.empty() && t.device == "cuda")
    std::fprintf(stderr, "cuda graphs: off (%s)\n", t.graph_reason.c_str());
  if (t.outer) std::fprintf(stderr, "sync: %s\n", parallel::describe(*t.outer).c_str());
  if (const std::string wan = comm::describe_wan(t.groups.dp); !wan.empty())
    std::fprintf(stderr, "data-parallel gradients: %s\n", wan.c_str());
  if (t.pipe->plan.stages.size() > 1 || t.pipe->plan.dp > 1 || t.groups.tp.size > 1)
    std::fprintf(stderr, "%s", parallel::describe_plan(t.pipe->plan, model_shape(cfg), t.seq_len).c_str());
  const host::MachineFacts machine = host::machine_facts();
  std::fprintf(stderr, "machine: %s\n", host::describe_machine(machine).c_str());  // as `slm doctor` shows it
  if (const host::BlasWarning w = host::blas_warning(machine.blas); !w.problem.empty() && t.device == "cpu")
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

// Resumes from the run folder's newest checkpoint where asked (--resume, or a launcher's restart);
// refuses a folder with checkpoints otherwise. Returns the checkpoint taken, if any.
static std::optional<std::string> resume_if_asked(Trainer& t, const std::string& run, bool resume) {
  const bool main_rank = t.groups.world.rank == 0;
  std::optional<std::string> ckpt = find_latest_checkpoint(run, [&](const std::string& w) {
    if (main_rank) std::fprintf(stderr, "warning: %s\n", w.c_str());
  });
  if (ckpt && !resume)
    throw UserError(fmt::format("{}: has checkpoints; pass --resume to continue it, or choose another run.dir", run));
  if (ckpt) {
    load_checkpoint(t, *ckpt);
    if (main_rank) std::fprintf(stderr, "resumed from %s at step %lld\n", ckpt->c_str(), static_cast<long long>(t.step));
  } else if (resume && main_rank) {
    std::fprintf(stderr, "no checkpoint in %s: starting from step 0\n", run.c_str());
  }
  if (t.outer) parallel::check_same_outer(*t.outer);
  return ckpt;
}

namespace {

// Steps are agreed in blocks (agreement.h): a block's all-reduce travels while the next block
// trains, so no step waits for it where a block lasts longer than the all-reduce's latency, and
// the block grows until it does (a world all-reduce of a few numbers took 0.61 s at 100 ms RTT on
// the testbed, 4 ranks, while a small model's step may take 20 ms). Every rank sees a block's sums
// after the same step, so all stop, save and resize blocks together. Evaluations, saves, the last
// step and a signal's stop wait for every agreement before them.
struct BlockAgreement {
  BlockAgreement(Trainer& t_, StepReport& r, RunCheckpoints& c) : t(t_), report(r), ckpts(c), last_agreed(t_.step) {}
  Trainer& t;
  StepReport& report;
  RunCheckpoints& ckpts;
  int64_t block = 1;               // steps per agreement from now on
  std::vector<LocalStep> filling;  // this block's steps, not sent yet
  std::optional<Agreement> in_flight;
  int64_t last_agreed;             // the last step reported
  bool stop = false;               // the ranks agreed to stop (a signal)

  // After each step: when the block is full (or `flush`), wait for the block before it, report it,
  // and send this one; with `flush` (or a stop just agreed) wait for this one too.
  void add(LocalStep s, bool flush) {
    filling.push_back(std::move(s));
    if (static_cast<int64_t>(filling.size()) < block && !flush) return;
    if (in_flight) {
      filling.back().wait_s = finish_in_flight();
      filling.back().paced = !flush;
    }
    in_flight.emplace(begin_agree(std::move(filling), interrupted(), ckpts.ask(), ckpts.status(), t.groups.world));
    filling.clear();
    if (flush || stop) finish_in_flight();
  }

 private:
  // Waits for the block in flight and reports it; returns the seconds waited.
  double finish_in_flight() {
    const auto t0 = std::chrono::steady_clock::now();
    Agreement a = std::move(*in_flight);
    in_flight.reset();
    const Agreed all = finish_agree(a);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report_block(a, all);
    return waited;
  }

  void report_block(const Agreement& a, const Agreed& all) {
    double step_s = 0, paced_wait_s = 0;
    for (size_t i = 0; i < a.steps.size(); ++i) {
      report(a.steps[i], all.steps[i], all, a.steps.size());
      step_s += all.steps[i].step_s / static_cast<double>(a.steps.size());
      paced_wait_s += all.steps[i].paced_wait_s;
    }
    last_agreed = a.steps.back().step;
    // The block's wait (on its last step) was for the block before, which had this block's steps to arrive.
    const int64_t lead = static_cast<int64_t>(a.steps.size());
    if (const int64_t next = std::max(block, steps_per_agreement(lead, step_s, paced_wait_s)); next != block) {
      report.log.say(fmt::format("agreement: the ranks waited {:.3f} s for the steps' all-reduce (steps of {:.3f} "
                                 "s); one all-reduce per {} steps from now on", paced_wait_s, step_s, next));
      block = next;
    }
    ckpts.on_agreed(all);
    stop = stop || all.stop;
  }
};

}  // namespace

// log.profile_steps: this rank's profile of steps w.first+1..w.second, in RUN/profile/rank_K.json;
// rank 0 sums it up in the log.
static void write_profile(const Trainer& t, const std::string& run, std::pair<int64_t, int64_t> w, RunLog& log) {
  const int rank = t.world.world.rank;
  const std::string source = fmt::format("slm rank {}, steps {}-{}", rank, w.first + 1, w.second);
  const nlohmann::json trace = stop_profiler(source, w.second - w.first);
  const std::string path = fmt::format("{}/profile/rank_{}.json", run, rank);
  fs::create_directories(run + "/profile");
  write_file_atomic(path, trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));  // names: not always UTF-8
  log.say(fmt::format("profile: {} ({}; `slm report {}`)", report::profile_line(report::summarize_profile(trace, path)),
                      path, run));
}

// The training step, fenced: log.trace_steps records the steps after the session's first
// (warm-up) and writes the trace after the last of them; log.profile_steps profiles the steps of
// profile_window (profiler.h). Returns the step as this rank measured it.
static LocalStep traced_step(Trainer& t, const std::string& run, int64_t first, int64_t end, RunLog& log) {
  const int64_t traced_end = first + 1 + t.cfg.log.trace_steps;
  const std::pair<int64_t, int64_t> profiled = profile_window(first, end, t.cfg.log.profile_steps);
  if (profiled.second > 0 && t.step == profiled.first) start_profiler(t.device == "cuda");
  const ByteCounts bytes = byte_counts(t);
  trace::set_recording(t.step > first && t.step < traced_end);
  const StepStats s = train_step(t);
  trace::set_recording(false);
  if (t.cfg.log.trace_steps > 0 && (t.step == traced_end || (t.step < traced_end && t.step == end)))
    write_trace(t, run);
  if (profiled.second > 0 && t.step == profiled.second) write_profile(t, run, profiled, log);
  const double now_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {s, t.step, now_unix, sent_since(t, bytes)};
}

// The validation losses: data.dir's ("val_loss", "val_ppl"), and with data.mix each mixed
// dataset's beside it ("val_loss/DIR"), in one record and one line.
static void validate_all(Trainer& t, RunLog& log) {
  const double v = evaluate(t, t.data.val);
  nlohmann::json j = {{"step", t.step}, {"val_loss", v}, {"val_ppl", std::exp(v)}};
  std::string line = fmt::format("step {}: val loss {:.4f}, perplexity {:.2f}", t.step, v, std::exp(v));
  const char* sep = ";";
  for (const data::NamedSplit& s : t.data.mix_val) {
    const double m = evaluate(t, s.shards);
    j[std::string(report::kMixValKey) + s.name] = m;
    line += fmt::format("{} {} {:.4f}", sep, s.name, m);
    sep = ",";
  }
  log.write(j);
  log.say(line);
}

int run_training(const Config& cfg_in, bool resume, int64_t stop_at) {
  const std::string run = cfg_in.run.dir;
  comm::tell_launcher_run_dir(run);  // before rendezvous: a restart that fails there is recorded too
  std::unique_ptr<Trainer> t = make_trainer(cfg_in);
  if (!t) return 0;  // left out by parallel.plan = "auto"
  const Config& cfg = t->cfg;
  const bool main_rank = t->groups.world.rank == 0;
  host::configure_cpu_threads(cfg.system.threads, t->world.env.local_world);
  const int restart = t->world.env.restart;  // the launcher started the job again after a failure:
  resume = resume || restart > 0;           // go on from the newest checkpoint
  comm::require_same(fmt::format("resume={} stop_at={}", resume, stop_at), t->groups.world, "--resume/--stop-at");
  fs::create_directories(run);
  const std::optional<std::string> ckpt = resume_if_asked(*t, run, resume);
  if (restart > 0 && main_rank) record_restart(*t, run, ckpt);
  if (main_rank) write_file_atomic(run + "/config.toml", to_toml(cfg));
  RunLog log(main_rank, run + "/metrics.jsonl", cfg.log.tensorboard ? run : "");
  const host::DeviceInfo dev = host::describe_device(t->device, t->precision, host::cpu_threads(),
                                                     cfg.system.peak_tflops, cfg.cost.price_per_hour);
  if (main_rank) print_header(*t, run, dev);
  StepReport report(*t, log, dev);
  RunCheckpoints ckpts(*t, run, log);
  BlockAgreement agreement(*t, report, ckpts);
  const int64_t first = t->step;
  const int64_t end = stop_at > 0 ? std::min(stop_at, cfg.schedule.max_steps) : cfg.schedule.max_steps;
  // After kDivergedSteps non-finite losses in a row the run stops with one line.
  constexpr int64_t kDivergedSteps = 5;
  if (cfg.log.trace_steps > 0 && t->device != "cpu") trace::set_sync([] { torch::cuda::synchronize(); });
  while (t->step < end) {
    const data::LoaderState before = train_position(*t);
    const int64_t step_before = t->step;
    Due due;
    try {
      LocalStep step = traced_step(*t, run, first, end, log);
      due = due_after(t->step, end, cfg.schedule.max_steps, cfg.eval.every, cfg.checkpoint.every);
      agreement.add(std::move(step), due.eval || due.save || due.last);
      if (report.diverged >= kDivergedSteps)
        throw UserError(fmt::format("loss not finite at steps {}..{}: training diverged (learning rate too "
                                    "high?); the last checkpoint with a finite loss is kept",
                                    agreement.last_agreed - report.diverged + 1, agreement.last_agreed));
    } catch (const comm::PeerLost&) {
      if (t->step == step_before) restore_train_position(*t, before);
      ckpts.keep_alone();
      throw;
    }
    try {
      if (due.eval) validate_all(*t, log);
      if (due.save || agreement.stop || ckpts.by_time) ckpts.save(t->step == end || agreement.stop, report.diverged);
    } catch (const comm::PeerLost&) {
      ckpts.keep_alone();
      throw;
    }
    if (agreement.stop && !due.last) {
      log.say(fmt::format("stopped by signal at step {}; resume with --resume", t->step));
      return stopped_exit_code();
    }
  }
  log.end_progress();
  if (t->outer && t->step == cfg.schedule.max_steps)
    log.say(fmt::format("sync: final outer sync at step {}: the {} sites hold one model", t->step,
                        parallel::num_sites(*t->outer)));
  return 0;
}

}  // namespace slm::train
