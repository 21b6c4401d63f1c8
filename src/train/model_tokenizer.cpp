// train/model_tokenizer.cpp: see model_tokenizer.h.
#include "train/model_tokenizer.h"

#include <fmt/format.h>

#include "data/manifest.h"
#include "model/hf_import.h"
#include "tokenizer/hf_files.h"
#include "util/error.h"

namespace slm::train {

ModelTokenizer model_tokenizer(const std::string& source, const Config& cfg, const std::string& given) {
  ModelTokenizer s;
  if (model::is_hf_dir(source)) {
    s.tok = tokenizer::load_tokenizer(given.empty() ? source : given);
    s.eot_id = model::read_hf_config(source).eos_id;
    if (s.eot_id < 0) s.eot_id = s.tok.special_id("<|endoftext|>");
    if (s.eot_id < 0) throw UserError(fmt::format("{}: config.json has no eos_token_id and the tokenizer no "
                                                  "<|endoftext|>", source));
    s.identity = tokenizer::model_identity(s.tok);
    return s;
  }
  data::Manifest man = data::read_manifest(cfg.data.dir);
  s.tok = tokenizer::load_tokenizer(given.empty() ? man.tokenizer_path : given);
  if (tokenizer::model_identity(s.tok) != man.tokenizer_identity)
    throw UserError(fmt::format("{}: is not the tokenizer the model was trained with", given));
  s.eot_id = man.eot_id;
  s.identity = man.tokenizer_identity;
  return s;
}

}  // namespace slm::train
