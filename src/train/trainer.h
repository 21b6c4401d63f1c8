// train/trainer.h: everything one training run holds, built once by make_trainer.
// Owns: Trainer (config, process groups, dataset, loaders, model, data-parallel state, optimizer,
// device, precision, step counter), make_trainer, and the per-step and evaluation verbs
// (step.cpp; make_trainer in setup.cpp). No I/O besides opening data and joining the job.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/mesh.h"
#include "comm/world.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "model/gpt2.h"
#include "parallel/data_parallel.h"
#include "parallel/diloco.h"
#include "parallel/pipeline/executor.h"
#include "train/config.h"
#include "train/device_update.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/step_graph.h"

namespace slm::train {

struct Trainer {
  Config cfg;                   // effective configuration (model.vocab_size filled in)
  comm::World world;            // this process in the job (world size 1 without a launcher)
  comm::ProcessGroups groups;   // this rank's stage: dp, tp; pp = stage-to-stage links
  data::Dataset data;           // memory-mapped shards
  std::unique_ptr<data::Loader> train_loader;
  model::GPT2 model;            // parameters are views of dp's flat buffer
  std::shared_ptr<parallel::DataParallel> dp;  // gradient reduction, ZeRO shard
  std::unique_ptr<parallel::pipeline::Pipeline> pipe;  // the plan, this rank's chunks, schedule
  std::shared_ptr<parallel::OuterSync> outer;  // [sync] mode = "diloco": the outer sync across sites
  AdamW adam;                   // moments for dp's shard
  LossScaler scaler;            // dynamic loss scaling (fp16), off otherwise
  bool update_on_device = false;  // norm, clip and overflow skip without a host sync (train/device_update.h)
  std::string update_reason;      // why not, where system.device_update = "auto" would have (for the log)
  UpdateScalars scalars;          // the update's learning rate and number on the device (update_on_device)
  std::shared_ptr<StepGraph> graph;  // system.cuda_graphs = "on" / "auto": the captured step (train/step_graph.h)
  std::string graph_reason;          // why not, where system.cuda_graphs = "auto" could not (for the log)
  // The next step's batches, loaded (and their copies to the device started) while this step's
  // kernels run, with the update on the device; `before`: where the loader stood before them.
  struct Prefetched {
    std::vector<std::vector<parallel::pipeline::MicroBatch>> batches;  // per inner step
    int64_t samples = 0, step = -1;  // the global step's samples; the step they are for (0-based)
    data::LoaderState before;
  };
  std::optional<Prefetched> prefetched;
  std::string device;     // "cpu" | "cuda"
  std::string precision;  // "fp32" | "bf16"
  std::string precision_reason;  // why, for the log
  int64_t seq_len = 0;    // T
  int64_t num_params = 0; // of the whole model (before any tensor-parallel split)
  parallel::FlatLayout model_layout;  // the whole model's flat layout: checkpoints use it
  int64_t dp_sequences = 0;  // sequences per micro-batch round of the replicas in this rank's dp group
  int64_t step = 0;       // optimizer steps done (under sync.by = "time": global steps; a site may
                          // take several inner steps in one)
  // sync.by = "time" (parallel/sync_by_time.h): every site's inner steps in the current round, and
  // this rank's inner-step time measured in it.
  std::vector<int64_t> round_steps;
  double inner_seconds = 0;
  int64_t inner_count = 0;
  bool warmed_up = false;  // the first step of a process (one-time costs) is not measured
  std::vector<double> site_step_s;  // every site's seconds per inner step, averaged over the rounds
  std::optional<parallel::Plan> planned;  // the plan before setup: chosen by parallel.plan = "auto"
                                          // (autoplan/auto_plan.h), else from the file or the flags
  double predicted_step_s = 0;            // its predicted step time (0 = no prediction)
  ~Trainer();
};

// Joins the job (rendezvous when launched with several ranks), opens the dataset (checking the
// tokenizer and model vocabulary), resolves device, precision and seq_len, initialises the model
// (identical on every rank), data parallelism and the optimizer. UserError on bad settings.
// nullptr on a rank that parallel.plan = "auto" leaves out (it has said so; it should exit 0).
std::unique_ptr<Trainer> make_trainer(const Config& cfg);

struct StepStats {
  double loss = 0;  // this rank's share of the global mean loss (the loop sums over ranks)
  double grad_norm = 0, lr = 0;
  int64_t tokens = 0;  // global batch
  double data_s = 0, optim_s = 0;
  double compute_s = 0;   // forward and backward compute
  double schedule_s = 0;  // the whole pipeline schedule (compute + waiting for other stages)
  double comm_s = 0;   // waiting for gradient reduction and parameter gathering (not hidden)
  bool skipped = false;   // gradients were not finite: no update (loss scale lowered)
  double loss_scale = 0;  // the scale this step used (0 = no loss scaling)
  double next_scale = 0;  // the scale after it (lowered where skipped; the step reports a step later)
  int outer_merged = 0;   // DiLoCo: fragments whose outer sync was merged after this step
  double outer_s = 0;     // DiLoCo: time in the outer sync (starting, waiting, merging)
};
// The step's wall time as the metrics report it (`step_s`): its parts added up.
inline double step_seconds(const StepStats& s) { return s.data_s + s.schedule_s + s.optim_s + s.comm_s + s.outer_s; }

// One optimizer step: the plan's micro-batches through this rank's schedule (step.cpp).
StepStats train_step(Trainer& t);
// Where the training data stands for the steps taken (what a checkpoint records): before any
// batches loaded ahead for the next step.
data::LoaderState train_position(const Trainer& t);
// Puts the loader back to `p` (a train_position), dropping batches loaded ahead.
void restore_train_position(Trainer& t, const data::LoaderState& p);
// Mean loss over eval.batches micro-batches from the start of a validation split (data.dir's, or a
// mixed dataset's); every rank calls it, the same split.
double evaluate(Trainer& t, const std::vector<data::Shard>& split);
// Mean loss of m over `batches` batches of `micro` sequences from `loader` (fewer if it runs out).
// `loss` maps (idx, targets) (B, T) to the mean loss (no gradients are taken).
using LossFn = std::function<at::Tensor(const at::Tensor& idx, const at::Tensor& targets)>;
double mean_loss(const LossFn& loss, data::Loader& loader, int64_t micro, int64_t batches,
                 const std::string& precision, const std::string& device);

// What the plan needs of the model (validation, memory estimate); `precision` sets the size of
// the activations backward keeps.
parallel::ModelShape model_shape(const model::GPT2Config& m, const std::string& precision = "fp32",
                                 bool sequence_parallel = false);
// The same for a run's configuration (its model and parallel.sequence_parallel).
parallel::ModelShape model_shape(const Config& cfg, const std::string& precision = "fp32");
// The memory of `layers` blocks and the head, forward and backward, at micro_batch x seq_len in
// this precision (the estimate of such a model on one rank): what the precision probe and the
// planner's profile time, checked against the machine's memory before they allocate it.
double blocks_bytes(const model::GPT2Config& m, int64_t layers, int64_t micro_batch, int64_t seq_len,
                    const std::string& precision);

// FLOPs of one optimizer step by the GPT-2 scaling studies' formula (Narayanan et al.):
// 72·B·s·h²·L·(1 + s/(6h)) + 6·B·s·h·V, with 96 for 72 under activation recomputation and V the
// padded vocabulary (a GPU runs the head's GEMMs over it; the CPU over V, 0.1% less for GPT-2):
// planner::model_flops, so training's MFU and the planner's TFLOP/s count the same work.
double step_flops(const model::GPT2Config& m, int64_t batch, int64_t seq_len);

}  // namespace slm::train
