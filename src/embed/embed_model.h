// embed/embed_model.h: a model ready to embed text: weights on their device, tokenizer, identity.
// Owns: EmbedModel, model_path, load_embed_model (any checkpoint, run folder or Hugging Face export) and
// embed_texts (short texts such as queries: each its first window).
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "embed/embedder.h"
#include "model/gpt2.h"
#include "train/model_tokenizer.h"

namespace slm::embed {

struct EmbedModel {
  model::GPT2 model;
  train::ModelTokenizer tok;
  std::string source;    // absolute path, as recorded in an index
  std::string identity;  // model_identity()
  std::string device;    // "cpu" | "cuda"
};

// The model folder of `source`: an `slm embed tune` output folder's model/, else source itself.
std::string model_path(const std::string& source);

// source: a run, checkpoint, Hugging Face folder or `slm embed tune` output folder (its model/);
// a run's newest valid checkpoint becomes the EmbedModel's source. device: auto | cpu | cuda.
// UserError for a missing or unreadable model.
EmbedModel load_embed_model(const std::string& source, const std::string& device);

// One unit vector per text (its first `window` tokens, the eot included), (N, C) fp32.
at::Tensor embed_texts(const EmbedModel& m, const std::vector<std::string>& texts, int64_t window,
                       const EmbedOptions& opt);

}  // namespace slm::embed
