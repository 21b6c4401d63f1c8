// model/hf_import.h: a Hugging Face GPT-2 folder (what `slm export` or transformers'
// save_pretrained writes: config.json + model.safetensors, tokenizer files beside them) as a GPT2.
// Owns: is_hf_dir, read_hf_config (config.json -> GPT2Config, refusing what slm's GPT-2 does not
// compute the same way), load_safetensors (F32/F16/BF16) and load_hf (weights, Conv1D transposed,
// the token embedding padded to the vocabulary multiple). Errors name the file and the field.
#pragma once
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "model/gpt2.h"

namespace slm::model {

// True when dir holds config.json and model.safetensors (and is not an slm checkpoint).
bool is_hf_dir(const std::string& dir);

struct HfConfig {
  GPT2Config model;      // n_layer, n_head, n_embd, block_size (n_positions), vocab_size
  int64_t eos_id = -1;   // eos_token_id, -1 when absent
};
HfConfig read_hf_config(const std::string& dir, int64_t vocab_pad = 128);

// Every tensor of a .safetensors file, as fp32 CPU tensors by name.
std::map<std::string, at::Tensor> load_safetensors(const std::string& path);

// The whole model, fp32 on the CPU, parameters requiring grad.
GPT2 load_hf(const std::string& dir, int64_t vocab_pad = 128);

// Copies every parameter of `from` that `to` holds (by name; a pipeline stage holds some blocks),
// checking shapes. `from` is a whole model.
void copy_parameters(const GPT2& from, GPT2& to);

}  // namespace slm::model
