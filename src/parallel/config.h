// parallel/config.h: the [parallel] configuration section: how ranks are laid out and how data
// parallelism reduces and shards. Owns: ParallelConfig, validate. No torch.
#pragma once
#include <cstdint>

namespace slm::parallel {

struct ParallelConfig {
  int64_t dp = -1;        // data-parallel degree; -1 = world size / tp
  int64_t tp = 1;         // tensor-parallel degree (ranks sharing each layer); divides n_head
  int64_t zero = 0;       // 0 DDP, 1 shard optimizer state, 2 + gradients (3 not yet)
  double bucket_mb = 25;  // gradient bucket size, MiB of fp32, reduced during backward
};

// UserError (one line) for a bad value.
void validate(const ParallelConfig& c);

}  // namespace slm::parallel
