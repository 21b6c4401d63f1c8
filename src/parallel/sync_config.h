// parallel/sync_config.h: the [sync] configuration section: how sites keep their models together.
// Owns: SyncConfig, validate. No torch.
//  mode = "step": every optimizer step averages gradients over every data-parallel replica (today's
//     data parallelism, hierarchical across sites with dist.ranks_per_site).
//  mode = "diloco": low-communication training across sites (DiLoCo, Douillard et al. 2023;
//     Streaming DiLoCo, 2025). Inside a site the plan trains every step as usual; every
//     inner_steps steps the sites average their pseudo-gradient (outer parameters minus their
//     own) and an outer SGD with Nesterov momentum updates the outer parameters, which every rank
//     then takes. parallel/diloco.h does it. by = "time": sites of different speed do different
//     numbers of inner steps per sync, their pseudo-gradients weighted by the tokens each saw
//     (parallel/sync_by_time.h).
#pragma once
#include <cstdint>
#include <string>

namespace slm::parallel {

struct SyncConfig {
  std::string mode = "step";     // step | diloco
  int64_t inner_steps = 50;      // H: inner optimizer steps between two syncs of a fragment
  double outer_lr = 0.7;         // outer SGD learning rate (published: 0.7)
  double outer_momentum = 0.9;   // outer Nesterov momentum (published: 0.9); 0 = plain SGD
  int64_t fragments = 1;         // F: the blocks in F fragments synced at staggered steps (Streaming
                                 // DiLoCo: 1/F of the model crosses at a time); divides n_layer
  int64_t delay = 0;             // tau: inner steps a fragment's outer sync may travel before it is
                                 // merged (overlaps communication with compute); < inner_steps
  double mix = 0.5;              // alpha: with delay > 0, merged = alpha * local + (1 - alpha) * outer
  std::string compress = "none"; // pseudo-gradients across sites: none (fp32) | bf16 | int8 (per-chunk
                                 // scales); bf16/int8 with error feedback
  int64_t int8_chunk = 1024;     // values per int8 scale
  std::string by = "steps";      // steps: every site does inner_steps steps between syncs | time: a
                                 // faster site does more in the same wall time (parallel/sync_by_time.h)
  std::string site_speeds;       // by = "time": relative speeds, one per site ("1,2.5"); "" = measured
  double max_speedup = 4;        // by = "time": a site does at most this many times inner_steps steps
};

// UserError (one line) for a bad value.
void validate(const SyncConfig& c);

}  // namespace slm::parallel
