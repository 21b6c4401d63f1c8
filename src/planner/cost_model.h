// planner/cost_model.h: the predicted step time, memory, traffic and cost of one candidate layout
// on one cluster. Owns: Candidate (a plan plus the [dist]/[model] options it needs), CostInputs,
// Prediction, predict, model_flops, describe_candidate. Pure: no torch, no c10d.
// The step is modelled as the executor runs it (parallel/pipeline/executor.h, train/step.cpp):
//  1. each replica's pipeline schedule, simulated (parallel/pipeline/schedule.h) with per-stage
//     forward/backward times from the profile (blocks / tp, embeddings on the first stage, head +
//     loss on the last), tensor-parallel all-reduces per block on the tp group's links, ZeRO-3's
//     per-block gathers, and stage-to-stage transfers over the links between the stages; where
//     ranks time-share cores, all replicas together at the speed the busy ranks leave each
//     (planner/core_sharing.h);
//  2. the data-parallel gradient reduction of each stage after its last backward: buckets in
//     backward order, what is not hidden behind the last micro-batch's backward is exposed;
//     hierarchical (the cross-site step runs after backward), bf16 across sites, channels;
//  3. the tied embedding between the last and first stage, the optimizer on each rank's shard,
//     and ZeRO-1/2's parameter all-gather;
//  4. the gradient norm's blocking sums of one number (ZeRO's dp group, every rank of a pipeline).
// Memory: parallel::estimate_memory plus the runtime's own overhead (the profile measures it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "parallel/plan.h"
#include "planner/cluster.h"
#include "planner/profile.h"

namespace slm::planner {

struct Candidate {
  parallel::Plan plan;         // its ranks are plan ranks 0..ranks.size()-1
  std::vector<int> ranks;      // the cluster rank of each plan rank (site by site)
  int64_t ranks_per_site = 0;  // > 0: hierarchical all-reduce (dist.ranks_per_site)
  bool compress = false;       // bf16 across sites (dist.compress; lossy)
  int channels = 1;            // connections per data-parallel group (dist.channels)
  bool zero_site = false;      // parallel.zero_scope = "site" (hybrid sharding)
  bool recompute = false;      // model.recompute (activation recomputation)
  bool sequence_parallel = false;  // parallel.sequence_parallel (tp > 1: the tokens split between the linears)
  int64_t diloco_steps = 0;    // > 0: DiLoCo across sites ([sync] mode = "diloco", int8 pseudo-gradients,
                               // this many inner steps; lossy): dp groups stay inside the sites
                               // (ranks_per_site), the plan is replica-major
};

struct CostInputs {
  const Cluster* cluster = nullptr;
  const ComputeProfile* profile = nullptr;  // by cluster rank
  parallel::ModelShape model;
  int64_t seq_len = 0;
  double bucket_mb = 25;       // parallel.bucket_mb
  double memory_cap_gb = 0;    // parallel.memory_cap_gb, on top of each rank's own memory (0 = none)
  std::vector<int> rank_class; // cluster ranks with the same class compute alike (identical profile,
                               // device, memory): their replicas are costed once (empty = all differ)
};

// Fills in.rank_class: ranks with identical profiles, devices and memory share a class.
void assign_rank_classes(CostInputs& in);
// For each replica, the first replica that costs the same (the same micro-batch and, per stage and
// tp rank, ranks of the same class in the same site): only those are costed.
std::vector<int> representative_of(const Candidate& c, const CostInputs& in);

struct Prediction {
  double step_s = 0;
  double pipeline_s = 0;      // the slowest replica's schedule: compute, tp, stage transfers, bubble
  double dp_comm_s = 0;       // gradient reduction not hidden behind backward (slowest stage)
  double zero_gather_s = 0;   // ZeRO-1/2 parameter all-gather after the step
  double optimizer_s = 0;     // slowest rank's AdamW step
  double tied_s = 0;          // pipelines: head gradient to the first stage, weights back
  double norm_s = 0;          // the gradient norm's blocking sums (ZeRO's dp group; every rank of a pipeline)
  double outer_sync_s = 0;    // DiLoCo: the outer sync across sites, amortised over its inner steps
  double bubble = 0;          // mean idle fraction of the pipeline ranks
  double cpu_bound_s = 0;     // ranks sharing cores: their compute, optimizer and communication's
                              // CPU over the cores they share (a floor under step_s)
  double tokens_per_s = 0, tflops_per_device = 0, price_per_hour = 0, tokens_per_dollar = 0;
  double cross_site_bytes = 0;       // per step, both directions
  std::vector<double> memory_bytes;  // per plan rank, runtime overhead included
  int tightest_rank = -1;            // cluster rank closest to (or most over) its cap
  double tightest_over_bytes = 0;    // its estimate minus its cap (> 0: does not fit)
  double tightest_cap_bytes = 0;
  bool fits = true;
};

Prediction predict(const Candidate& c, const CostInputs& in);
// Forward + backward of virtual stage k for one micro-batch of `replica` (its slowest tp rank:
// compute, tp all-reduces, ZeRO-3 gathers): what the stage split balances.
double stage_compute_s(const Candidate& c, const CostInputs& in, int k, int replica);
// Its forward and backward apart (what `log.trace_steps` times per micro-batch in training; where
// ranks share cores, at the profile's all-busy speed).
struct StageSeconds {
  double forward = 0, backward = 0;
};
StageSeconds stage_seconds(const Candidate& c, const CostInputs& in, int k, int replica);
// Largest (estimate - cap) over the ranks of virtual stage k, bytes (> 0: does not fit; -inf
// when no rank has a cap).
double stage_memory_over(const Candidate& c, const CostInputs& in, int k);
// FLOPs of one optimizer step (Narayanan et al.): 72·B·s·h²·L·(1 + s/(6h)) + 6·B·s·h·V, with
// 96 for 72 under activation recomputation (the studies' TFLOP/s per device).
double model_flops(const parallel::ModelShape& m, int64_t batch, int64_t seq_len);
// "pp 2 x tp 2, 1f1b x 4 micro-batches of 2, layers 12+12, ZeRO 0" and the reduction options.
std::string describe_candidate(const Candidate& c);
// The layout family, for "why the rest lost": "dp 4", "pp 2 x dp 2", "tp 4", "pp 2 x tp 2", ...
std::string family_of(const Candidate& c);

}  // namespace slm::planner
