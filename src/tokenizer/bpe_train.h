// tokenizer/bpe_train.h: learning merges from word counts (byte-level BPE, GPT-2 layout).
// Owns: TrainOptions and train_bpe. Ids: 0..255 the bytes in GPT-2's order, then merges in the
// order learned, then the special tokens (so a single "<|endoftext|>" gets the last id, as in
// GPT-2). Pair counts are updated incrementally per merge (only words containing the merged
// pair are touched), with a lazily-invalidated max-heap: no rescan of the corpus per merge.
// Ties between equally frequent pairs go to the smaller (left id, right id): deterministic.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/bpe_model.h"
#include "tokenizer/word_count.h"

namespace slm::tokenizer {

struct TrainOptions {
  int vocab_size = 32768;                              // total, specials included; >= 256 + specials
  int64_t min_frequency = 2;                           // a pair seen fewer times is never merged
  std::vector<std::string> specials{"<|endoftext|>"};  // appended after the merges
};

// Throws UserError naming the problem; train_bpe calls it first, callers may call it before any
// expensive work.
void validate(const TrainOptions& opt);

// Throws UserError on bad options. on_merge (optional) is called with the merges done so far.
// The result may have fewer tokens than asked when no pair reaches min_frequency any more.
BpeModel train_bpe(const WordCounts& counts, const TrainOptions& opt,
                   const std::function<void(int)>& on_merge = {});

}  // namespace slm::tokenizer
