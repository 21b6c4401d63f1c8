// data/mix.h: training on several prepared datasets at once (data.mix): the setting's form, and
// opening them as one dataset whose training split the loader draws from by share.
// Owns: MixEntry, parse_mix, open_mixed_dataset.
#pragma once
#include <string>
#include <vector>

#include "data/manifest.h"

namespace slm::data {

struct MixEntry {
  std::string dir;  // a dataset from `slm data prepare`, made with data.dir's tokenizer
  double share;     // its share of the training samples, in (0, 1)
};

// "DIR=SHARE, DIR=SHARE, ...": datasets beside data.dir and their shares of the training samples;
// data.dir takes the rest, so the shares sum to less than 1. Empty: no mix. UserError naming the
// entry on a bad one.
std::vector<MixEntry> parse_mix(const std::string& text);

// data.dir's dataset with the mix's training shards after its own (Dataset::train_mix says whose
// they are and their shares); validation is data.dir's, each mixed dataset's own split beside it
// (Dataset::mix_val, in the mix's order). Each mixed dataset is checked as open_dataset checks one,
// and must have been made with data.dir's tokenizer.
Dataset open_mixed_dataset(const std::string& dir, const std::vector<MixEntry>& mix);

}  // namespace slm::data
