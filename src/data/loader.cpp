// data/loader.cpp: see loader.h.
#include "data/loader.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <fmt/format.h>

#include "util/error.h"
#include "util/random.h"

namespace slm::data {

Loader::Loader(const std::vector<Shard>& shards, LoaderOptions opt, SourceMix mix) : shards_(shards), opt_(opt) {
  if (opt_.seq_len < 1) throw UserError(fmt::format("sequence length {} must be >= 1", opt_.seq_len));
  for (const Shard& s : shards_) {
    first_.push_back(total_);
    total_ += s.size() > opt_.seq_len ? (s.size() - 1) / opt_.seq_len : 0;
  }
  if (total_ == 0)
    throw UserError(fmt::format("split has no sample of {} tokens: too little data for seq_len {}",
                                opt_.seq_len + 1, opt_.seq_len));
  epoch_len_ = total_;
  if (mix.shards.size() > 1) set_mix(mix);
  start_epoch();
}

void Loader::set_mix(const SourceMix& mix) {
  const int64_t described = std::accumulate(mix.shards.begin(), mix.shards.end(), int64_t{0});
  if (mix.shares.size() != mix.shards.size() || described != static_cast<int64_t>(shards_.size()))
    throw std::invalid_argument("Loader: the mix does not describe the shards");
  epoch_len_ = 0;
  size_t shard = 0;
  for (size_t s = 0; s < mix.shards.size(); ++s) {
    source_first_.push_back(shard < first_.size() ? first_[shard] : total_);
    shard += static_cast<size_t>(mix.shards[s]);
    const int64_t end = shard < first_.size() ? first_[shard] : total_;
    if (end == source_first_.back())
      throw UserError(fmt::format("dataset {} of the mix has no sample of {} tokens: too little data for seq_len {}",
                                  s + 1, opt_.seq_len + 1, opt_.seq_len));
    quota_.push_back(std::max<int64_t>(1, std::llround(mix.shares[s] * static_cast<double>(total_))));
    epoch_len_ += quota_.back();
  }
  source_first_.push_back(total_);
}

void Loader::fill_mixed_epoch() {
  order_.clear();
  for (size_t s = 0; s < quota_.size(); ++s) {
    std::vector<int64_t> perm(static_cast<size_t>(source_first_[s + 1] - source_first_[s]));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = source_first_[s] + static_cast<int64_t>(i);
    SplitMix64 rng(mix_seed(mix_seed(opt_.seed, static_cast<uint64_t>(state_.epoch)), s + 1));
    for (int64_t taken = 0; taken < quota_[s];) {  // whole permutations while the quota exceeds the samples
      shuffle(perm, rng);
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(perm.size()), quota_[s] - taken);
      order_.insert(order_.end(), perm.begin(), perm.begin() + n);
      taken += n;
    }
  }
  SplitMix64 rng(mix_seed(opt_.seed, static_cast<uint64_t>(state_.epoch)));
  if (opt_.shuffle) shuffle(order_, rng);
}

void Loader::start_epoch() {
  if ((!opt_.shuffle && quota_.empty()) || order_epoch_ == state_.epoch) return;
  order_epoch_ = state_.epoch;
  if (!quota_.empty()) return fill_mixed_epoch();
  order_.resize(static_cast<size_t>(total_));
  for (int64_t i = 0; i < total_; ++i) order_[i] = i;
  SplitMix64 rng(mix_seed(opt_.seed, static_cast<uint64_t>(state_.epoch)));
  shuffle(order_, rng);
}

void Loader::restore(const LoaderState& s) {
  if (s.epoch < 0 || s.cursor < 0 || s.cursor > epoch_len_)
    throw UserError(fmt::format("loader state (epoch {}, cursor {}) does not fit this split of {} samples", s.epoch,
                                s.cursor, epoch_len_));
  state_ = s;
  start_epoch();
}

void Loader::read_sample(int64_t g, int64_t* in, int64_t* tgt) const {
  // The last shard whose first sample is <= g (skips shards too short to hold a sample).
  auto it = std::upper_bound(first_.begin(), first_.end(), g);
  size_t shard = static_cast<size_t>(it - first_.begin()) - 1;
  const Shard& s = shards_[shard];
  int64_t start = (g - first_[shard]) * opt_.seq_len;
  for (int64_t t = 0; t < opt_.seq_len; ++t) {
    in[t] = s[start + t];
    tgt[t] = s[start + t + 1];
  }
}

void Loader::reserve(int64_t global_samples) {
  if (global_samples > epoch_len_)
    throw UserError(fmt::format("global batch of {} samples is larger than the split ({} samples "
                                "of {} tokens)",
                                global_samples, epoch_len_, opt_.seq_len + 1));
  if (state_.cursor + global_samples > epoch_len_) {  // not enough left: next epoch
    state_.epoch += 1;
    state_.cursor = 0;
    start_epoch();
  }
}

Batch Loader::next_slice(int64_t global_samples, int64_t offset, int64_t count) {
  if (global_samples < 1 || offset < 0 || count < 0 || offset + count > global_samples)
    throw UserError(fmt::format("batch slice [{}, {}) does not fit a global batch of {}", offset,
                                offset + count, global_samples));
  reserve(global_samples);
  Batch b;
  b.B = count;
  b.T = opt_.seq_len;
  b.epoch = state_.epoch;
  b.inputs.resize(static_cast<size_t>(count * b.T));
  b.targets.resize(b.inputs.size());
  for (int64_t i = 0; i < count; ++i) {
    int64_t pos = state_.cursor + offset + i;
    int64_t g = order_.empty() ? pos : order_[pos];
    read_sample(g, &b.inputs[i * b.T], &b.targets[i * b.T]);
  }
  state_.cursor += global_samples;
  return b;
}

}  // namespace slm::data
