// embed/embedder.h: windows -> unit vectors with a GPT-2 model, batched, without gradients.
// Owns: EmbedOptions, final_hidden, padded_batch, embed_windows and model_identity (what an index records of the model).
// Windows are sorted by length and batched up to a token budget, so padding stays small; right
// padding never changes the real positions (causal attention), so no attention mask is needed.
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "embed/pooling.h"
#include "embed/windows.h"
#include "model/gpt2.h"

namespace slm::embed {

struct EmbedOptions {
  Pooling pooling = Pooling::kMean;
  int64_t batch_tokens = 16384;  // padded tokens per forward pass
  std::string device = "cpu";    // "cpu" | "cuda" (the model is moved there)
  std::string precision = "fp32";  // "fp32" | "bf16" | "fp16" (autocast; vectors are fp32 anyway)
  bool quiet = false;            // no progress line
};

// idx (B, T) -> the final hidden states (B, T, C): blocks and final LayerNorm, no LM head, no
// dropout; differentiable unless under a NoGradGuard.
at::Tensor final_hidden(const model::GPT2& m, const at::Tensor& idx);

// Rows of token ids as one right-padded (rows, longest) int64 CPU batch; lengths = each row's size.
at::Tensor padded_batch(const std::vector<const std::vector<int64_t>*>& rows, std::vector<int64_t>& lengths);

// (N, C) fp32 CPU tensor, row i = windows[i]'s unit vector. `m` must be on opt.device.
at::Tensor embed_windows(const model::GPT2& m, const std::vector<Window>& windows, const EmbedOptions& opt);

// 32 hex digits over the parameters' names, shapes and fp32 values (wte's real vocabulary rows):
// the same for a checkpoint and its Hugging Face export, different for any other weights.
std::string model_identity(const model::GPT2& m);

}  // namespace slm::embed
