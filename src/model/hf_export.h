// model/hf_export.h: a trained model in Hugging Face's format.
// Owns: save_safetensors (the file format: 8-byte little-endian header length, JSON header of
// name -> dtype/shape/byte range, raw little-endian data) and export_hf, which writes
// model.safetensors + config.json for transformers' GPT2LMHeadModel (Conv1D weights, i.e. our
// linear weights transposed; token embedding cut to the real vocabulary; LM head tied).
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "model/gpt2.h"

namespace slm::model {

// Tensors are written as fp32, contiguous, in the given order.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, at::Tensor>>& tensors);

// Writes `dir` (atomically; refuses an existing one unless overwrite) with model.safetensors and
// config.json, then the tokenizer of tokenizer_dir (any format load_tokenizer reads) as
// transformers' GPT2Tokenizer files (vocab.json, merges.txt, tokenizer_config.json with
// model_max_length = the block size, special_tokens_map.json). eot_id becomes bos/eos_token_id.
void export_hf(const GPT2& m, const std::string& tokenizer_dir, int64_t eot_id,
               const std::string& dir, bool overwrite);
// The same files written into an existing folder `dir` (for callers that add files of their own
// to one atomic folder, e.g. `slm embed tune`'s model with its optimizer state).
void write_hf_files(const GPT2& m, const std::string& tokenizer_dir, int64_t eot_id, const std::string& dir);

}  // namespace slm::model
