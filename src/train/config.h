// train/config.h: the training configuration: one struct per TOML section, each field with a
// default, a unit and a comment. Owns: Config and its sections, load_config (TOML file + `--set
// section.key=value` overrides, unknown keys rejected by name), validate, to_toml (the effective
// configuration written into the run folder). Components receive only their own section; only
// cli/ and train/loop see the whole Config.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/world.h"
#include "model/gpt2.h"
#include "parallel/config.h"
#include "parallel/sync_config.h"
#include "planner/config.h"

namespace slm::train {

struct RunConfig {
  std::string dir = "runs/default";  // run folder: config.toml, metrics.jsonl, checkpoints/
};

struct InitConfig {
  std::string from;  // a Hugging Face GPT-2 folder to start from (its shape and weights); "" = random
};

struct DataConfig {
  std::string dir;      // prepared dataset (`slm data prepare`)
  std::string mix;      // other datasets' shares of the training samples: "DIR=SHARE, ..." (data/mix.h)
  uint64_t seed = 1337;  // sample order of the training split
};

struct BatchConfig {
  int64_t batch_size = 32;  // sequences per optimizer step (global batch)
  int64_t micro_batch = 8;  // sequences per forward/backward; must divide batch_size
  int64_t seq_len = 0;      // tokens per sequence; 0 = model.block_size
};

struct OptimConfig {
  std::string name = "adamw";  // adamw | sgd (plain SGD with decoupled weight decay: a reference for
                               // tests of exact equivalences)
  double lr = 6e-4;           // peak learning rate
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;  // AdamW, on matrices only (not biases, LayerNorm, wpe)
  double grad_clip = 1.0;     // global-norm clip; 0 = off
};

struct ScheduleConfig {
  int64_t max_steps = 1000;     // optimizer steps in the whole run
  int64_t warmup_steps = 100;   // linear warmup from 0 to optim.lr
  std::string decay = "cosine";  // cosine | linear | sqrt (1 - sqrt) | constant, down to the floor at max_steps
  double min_lr_ratio = 0.1;    // floor, as a fraction of optim.lr
  // 0: the decay starts where warmup ends; in (0, 1]: optim.lr is held until the last decay_ratio
  // of max_steps, which decay (warmup-stable-decay)
  double decay_ratio = 0;
};

struct SystemConfig {
  std::string device = "auto";     // auto | cpu | cuda
  std::string precision = "auto";  // auto | fp32 | bf16 | fp16 (auto: bf16 where the device has
                                   // it, fp16 on CUDA devices without bf16, else fp32)
  std::string loss_scaling = "auto";  // auto (on for fp16) | on | off: dynamic loss scaling
  double loss_scale_init = 65536;     // first loss scale
  int64_t loss_scale_growth_interval = 2000;  // finite steps before the scale doubles
  int threads = 0;                 // CPU threads per rank (at most 4096); 0 = cores / ranks on this machine
  uint64_t seed = 1337;            // model initialisation
  double peak_tflops = 0;          // device peak for MFU; 0 = measure by a GEMM once (cached)
  std::string device_update = "auto";  // auto (on for CUDA) | on | off: gradient norm, clipping and the
                                       // overflow skip on the device, one host read per step
                                       // (train/device_update.h)
  std::string cuda_kernels = "auto";  // auto (slm's own CUDA kernels where they apply) | off (ATen's
                                      // ops): model/own_cuda_kernels.h
  std::string cuda_graphs = "off";  // off | on | auto (on where a step can be captured): the whole step
                                    // captured as one CUDA graph and replayed (train/step_graph.h)
  std::string attention = "auto";  // GPU attention kernel: auto (the fastest of cudnn, flash and
                                   // efficient for each shape, measured once per GPU and cached) |
                                   // cudnn | flash | efficient | math | default (LibTorch's order)
};

struct CostConfig {
  double price_per_hour = 0;  // USD per device-hour (each rank is a device); 0 = an assumed price
};

struct EvalConfig {
  int64_t every = 100;   // validate every N steps (and at the end); 0 = never
  int64_t batches = 20;  // micro-batches of validation data per evaluation
};

struct LogConfig {
  int64_t every = 10;  // plain progress line every N steps when stderr is not a terminal
  int64_t trace_steps = 0;  // > 0: each rank's timeline of this many steps after the session's first
                            // (run.dir/trace/rank_K.json, Chrome trace events; util/trace.h)
  int64_t profile_steps = 0;  // > 0: LibTorch's profiler over this many steps after the session's first
                              // three (run.dir/profile/rank_K.json: operators and GPU kernels, a Chrome
                              // trace; train/profiler.h), summed up in the log and by `slm report`
  bool tensorboard = true;  // rank 0 also writes metrics.jsonl's curves as a TensorBoard event file in
                            // run.dir (report/tensorboard.h): `tensorboard --logdir runs/`
};

struct CheckpointConfig {
  int64_t every = 200;  // save every N steps (and at the end and on SIGINT/SIGTERM); 0 = only those
  double every_minutes = 0;  // also save when this many minutes passed since the last save (rank 0's
                             // clock decides for all); 0 = off
  int64_t keep = 3;     // newest checkpoints kept; older ones are deleted
  bool async = false;   // write in the background while training goes on (the last save is
                        // synchronous); costs a host copy of the rank's state while in flight
};

struct Config {
  RunConfig run;
  InitConfig init;
  model::GPT2Config model;
  DataConfig data;
  BatchConfig batch;
  OptimConfig optim;
  ScheduleConfig schedule;
  SystemConfig system;
  EvalConfig eval;
  LogConfig log;
  CheckpointConfig checkpoint;
  CostConfig cost;
  parallel::ParallelConfig parallel;
  comm::DistConfig dist;
  parallel::SyncConfig sync;
  planner::PlannerConfig planner;
};

// Defaults, then the TOML file (if not empty), then the [set] table of the plan file that
// parallel.plan names (planner/plan_file.h), then each "section.key=value" override.
// UserError names the file, section and key.
Config load_config(const std::string& path, const std::vector<std::string>& overrides);
// Cross-field checks (model validity, batch divisibility, known enum values); one-line errors.
void validate(const Config& c);
std::string to_toml(const Config& c);
// Applies "section.key=value" settings (as --set gives them; the value in TOML, or a bare word).
void apply_settings(Config& c, const std::vector<std::string>& settings);
// Same, from TOML text (used to read a run's saved configuration).
Config parse_config_text(const std::string& text, const std::string& where);

}  // namespace slm::train
