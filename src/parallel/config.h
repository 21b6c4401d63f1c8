// parallel/config.h: the [parallel] configuration section: how ranks are laid out and how data
// parallelism reduces and shards. Owns: ParallelConfig, validate. No torch.
// Either the degrees below (an even preset: parallel/plan.h plan_from_flags) or `plan`, a plan
// file with the full form (uneven stages, per-stage tp, per-replica micro-batches).
#pragma once
#include <cstdint>
#include <string>

namespace slm::parallel {

struct ParallelConfig {
  int64_t dp = -1;        // data-parallel degree; -1 = world size / (tp * pp)
  int64_t tp = 1;         // tensor-parallel degree (ranks sharing each layer); divides n_head
  int64_t pp = 1;         // pipeline stages (rank sets); layers split evenly
  int64_t virtual_stages = 1;  // model chunks per pipeline rank (schedule "interleaved")
  std::string schedule = "auto";  // auto | none | gpipe | 1f1b | interleaved (auto: none for pp 1,
                                  // interleaved when virtual_stages > 1, else 1f1b)
  int64_t micro_batches = 0;  // per replica per step; 0 = batch.batch_size / (micro_batch * dp)
  std::string plan;       // plan file (TOML, `slm plan`); replaces dp/tp/pp/schedule/micro_batches;
                          // "auto" = the planner chooses at start (autoplan/auto_plan.h, [planner])
  int64_t zero = 0;       // 0 DDP, 1 shard optimizer state, 2 + gradients, 3 + parameters
  std::string zero_scope = "dp";  // ranks that split ZeRO state: "dp" = the whole data-parallel group;
                                  // "site" = each site's ranks (dist.ranks_per_site), replicated
                                  // across sites (hybrid sharding: parameter gathers stay in the site)
  bool sequence_parallel = false;  // with tp > 1: LayerNorms and residuals on 1/tp of the tokens
                                   // (parallel/tensor/layers.h); no effect with tp 1
  double bucket_mb = 25;  // gradient bucket size, MiB of fp32, reduced during backward
  double memory_cap_gb = 0;  // per-rank memory limit, GiB (estimate, checked before training); 0 = none
};

// UserError (one line) for a bad value.
void validate(const ParallelConfig& c);

}  // namespace slm::parallel
