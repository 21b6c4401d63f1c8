// tokenizer/hf_files.h: a tokenizer on disk in the GPT-2 / Hugging Face format.
// Owns: save_tokenizer and load_tokenizer. A tokenizer directory holds vocab.json (token -> id,
// tokens in GPT-2's byte-unicode alphabet) and merges.txt ("#version: 0.2" then one "a b" merge
// per line, by rank), plus tokenizer_config.json and special_tokens_map.json so that
// transformers' GPT2Tokenizer.from_pretrained(dir) loads it. OpenAI's original names
// (encoder.json, vocab.bpe) load too, and so does a lone tokenizer.json (the `tokenizers`
// library's file, all transformers 5 saves) when it is a byte-level BPE. Specials are the vocabulary entries that are neither a
// byte nor the result of a merge (GPT-2's "<|endoftext|>"). Errors name the file and line.
#pragma once
#include <cstdint>
#include <string>

#include "tokenizer/bpe_model.h"

namespace slm::tokenizer {

// Writes `dir` atomically (AtomicDir); refuses to replace an existing one unless overwrite.
// tokenizer_config.json says model_max_length 1024 (GPT-2's context): the tokenizer alone has no model.
void save_tokenizer(const BpeModel& m, const std::string& dir, bool overwrite);
// The same four files written into an existing folder, with the model's context length (what
// transformers truncates to), whatever format the tokenizer was read from: `slm export`.
void write_tokenizer_files(const BpeModel& m, const std::string& dir, int64_t model_max_length);
BpeModel load_tokenizer(const std::string& dir);

}  // namespace slm::tokenizer
