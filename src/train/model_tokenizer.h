// train/model_tokenizer.h: the tokenizer a trained or imported model reads text with.
// Owns: ModelTokenizer and model_tokenizer(): an imported Hugging Face folder's own tokenizer,
// else the one of the checkpoint's dataset (its manifest), or a given one checked against it.
// For eval, generate, embed and search.
#pragma once
#include <cstdint>
#include <string>

#include "tokenizer/bpe_model.h"
#include "train/config.h"

namespace slm::train {

struct ModelTokenizer {
  tokenizer::BpeModel tok;
  int64_t eot_id = -1;    // documents start with it; generation stops at it
  std::string identity;   // what a dataset must have been prepared with
};

// `source` as given to load_model, `cfg` what it returned, `given` a tokenizer folder or "".
ModelTokenizer model_tokenizer(const std::string& source, const Config& cfg, const std::string& given);

}  // namespace slm::train
