// parallel/pipeline/executor.h: runs one rank's action list (schedule.h) on its model chunks,
// exchanging activations and their gradients point to point with the neighbouring stages.
// Owns: Pipeline (this rank's part of the plan and its groups), MicroBatch, run_actions,
// sync_tied_weights, post_norm_receives, pipeline_grad_norm_sq (and its device form).
// Transfers: sends are asynchronous (waited for at the end of the step); receives are posted
// kReceivesAhead actions ahead under Gloo (a message moves once its receive is posted, so the
// receiver's notice crosses a slow link while it computes), one ahead under NCCL (which pairs
// messages by order). With different tp degrees on two neighbouring stages, receiving tp rank j
// takes activations from sending tp rank j % tp_send, and sending tp rank i takes gradients from
// receiving tp rank i % tp_recv (the activations between stages are whole on every tp rank; with
// equal tp on both sides each sends only its 1/tp and the receivers all-gather it over their tp
// group). Tied embedding (tied_embedding.h): the last stage's head gradient is added to the first stage's wte
// gradient before its final backward, and the updated wte goes to the last stage at the start of
// the next action list.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "comm/collectives.h"
#include "comm/group.h"
#include "model/gpt2.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/stage.h"
#include "parallel/plan.h"

namespace slm::parallel {
struct DataParallel;
}

namespace slm::parallel::pipeline {

struct Pipeline {
  Plan plan;
  RankRole role;
  std::vector<Chunk> chunks;    // this rank's model chunks
  std::vector<Action> actions;  // this rank's training schedule for one step
  comm::Group p2p;              // every rank, own connections: stage-to-stage traffic only
  comm::Group tp;               // this stage's tensor-parallel group
  model::GPT2* model = nullptr;
};

struct MicroBatch {
  at::Tensor x, y;  // (b, T) inputs and targets of this replica's micro-batch
};

struct ScheduleResult {
  at::Tensor loss;       // sum of the micro-batch losses, double, on the device (last stage only;
                         // undefined elsewhere): run_actions does not wait for it
  double compute_s = 0;  // time in forward/backward compute (not waiting for a peer)
  double wall_s = 0;     // time of the whole action list
};

// What each micro-batch loss is multiplied by for its backward: its weight times the loss scale,
// as a number, or where `on_device` is defined that 0-dim fp32 tensor's value when the backward runs
// (a CUDA graph replays it with each step's value: train/device_update.h).
struct LossFactor {
  double value = 1;
  at::Tensor on_device;
};

// Runs `actions` over `batches` (indexed by micro-batch). train: each micro-batch loss is
// multiplied by `factor` for its backward (begin_backward is called before each; the final one
// reduces). Not train: forward actions only, no gradients. Starts by sending the first stage's
// wte to the last stage's tied head (overlapping the first forward).
ScheduleResult run_actions(Pipeline& p, DataParallel& d, const std::vector<Action>& actions,
                           const std::vector<MicroBatch>& batches, const LossFactor& factor, bool train);

// After a load or an outer (DiLoCo) update: the first stage's wte goes to the last stage's head
// (no-op without pipeline stages). run_actions does the same at its start, so training steps need
// no call.
void sync_tied_weights(Pipeline& p, DataParallel& d);

// Squared global gradient norm over every stage: d's norm, summed across this replica's pipeline
// ranks point to point (every replica has the same stage norms after its dp reduction). The
// receives are posted before the step's schedule (post_norm_receives), the sum taken after the
// gradients are reduced; the same number on every rank.
struct PendingNorm {
  std::vector<at::Tensor> theirs;    // per pipeline rank: its stage's squared norm
  std::vector<comm::Pending> recvs;  // their receives
  bool early = false;                // posted before the schedule (Gloo), else with the sends (NCCL)
};
PendingNorm post_norm_receives(Pipeline& p, DataParallel& d);
double pipeline_grad_norm_sq(Pipeline& p, DataParallel& d, PendingNorm& posted);
// The same as a 0-dim double tensor on the gradients' device, without a host sync where the
// transfers have none (NCCL); for system.device_update.
at::Tensor pipeline_grad_norm_sq_on_device(Pipeline& p, DataParallel& d, PendingNorm& posted);

// Forward-only list: F0 .. F(micro-1) on every chunk (evaluation).
std::vector<Action> forward_actions(int micro, int chunks);

}  // namespace slm::parallel::pipeline
