// data/loader.h: (input, target) batches of B x T tokens from a split's shards.
// Owns: Loader, LoaderOptions, LoaderState, Batch.
// A *sample* is a window of T+1 consecutive tokens inside one shard, at stride T (sample s of a
// shard covers tokens [s*T, s*T + T]); samples never cross shards. Each epoch visits every sample
// once, in a seeded permutation (or in order, for validation). A *global batch* is the next
// G samples of the epoch; a rank takes a contiguous slice of it, so ranks see disjoint samples
// and the global batch does not depend on how many ranks share it. An epoch ends when fewer than
// G samples remain (the remainder is skipped; a step split into micro-batches reserves its whole
// global batch first, so every split of it reads the same samples). State is two integers; restore() resumes exactly.
// A mix of datasets (data.mix, SourceMix) draws each epoch's samples from every dataset by its share:
// an epoch is as many samples as the datasets hold together, dataset s gives round(share_s x that) of
// them (a new seeded permutation of its samples, repeated whole where its share is more than it
// holds), and the epoch serves them in one seeded shuffle.
#pragma once
#include <cstdint>
#include <vector>

#include "data/shard.h"

namespace slm::data {

struct LoaderOptions {
  int64_t seq_len = 256;  // T: tokens per sample (targets are inputs shifted by one)
  uint64_t seed = 1337;   // permutation seed; the epoch number is mixed in
  bool shuffle = true;    // false: samples in order (validation)
};

// The shards given to a Loader as the train shards of several datasets, one after another.
struct SourceMix {
  std::vector<int64_t> shards;  // how many of the shards each dataset has, in order
  std::vector<double> shares;   // each dataset's share of an epoch's samples (they sum to 1)
};

struct LoaderState {
  int64_t epoch = 0;   // completed epochs
  int64_t cursor = 0;  // samples of this epoch already handed out (all ranks together)
};

struct Batch {
  int64_t B = 0, T = 0;
  std::vector<int64_t> inputs;   // (B, T) row-major
  std::vector<int64_t> targets;  // (B, T): inputs shifted left by one token
  int64_t epoch = 0;             // epoch these samples belong to
};

class Loader {
 public:
  // `shards` must outlive the Loader. Throws UserError if the shards (or one dataset of a mix) hold
  // no full sample. An empty mix: the shards are one dataset.
  Loader(const std::vector<Shard>& shards, LoaderOptions opt, SourceMix mix = {});
  int64_t num_samples() const { return epoch_len_; }  // samples per epoch

  // The next global batch of `global_samples`; returns the `count` samples starting at `offset`
  // within it (a rank's slice). Every rank calls it with the same global_samples.
  Batch next_slice(int64_t global_samples, int64_t offset, int64_t count);
  // A step whose global batch is read in several groups (micro-batches of next_slice) calls this
  // first with the whole batch, so that the step's samples come from one epoch however the batch is
  // split: starts the next epoch when fewer than `global_samples` remain in this one.
  void reserve(int64_t global_samples);
  // Uniform data parallelism: global batch = B * world, rank r takes samples [r*B, (r+1)*B).
  Batch next(int64_t B, int rank = 0, int world = 1) {
    return next_slice(B * world, B * rank, B);
  }

  LoaderState state() const { return state_; }
  void restore(const LoaderState& s);

 private:
  void start_epoch();
  void set_mix(const SourceMix& mix);  // each dataset's samples and quota per epoch
  void fill_mixed_epoch();             // order_ for a mix: each dataset's quota, then one shuffle
  void read_sample(int64_t global_index, int64_t* in, int64_t* tgt) const;
  const std::vector<Shard>& shards_;
  LoaderOptions opt_;
  std::vector<int64_t> first_;  // first global sample index of each shard (prefix sums)
  int64_t total_ = 0;
  int64_t epoch_len_ = 0;           // total_, or a mix's quotas summed
  std::vector<int64_t> source_first_, quota_;  // a mix: each dataset's first sample and samples per epoch
  std::vector<int64_t> order_;  // this epoch's samples in order (empty when in order, unmixed)
  int64_t order_epoch_ = -1;
  LoaderState state_;
};

}  // namespace slm::data
