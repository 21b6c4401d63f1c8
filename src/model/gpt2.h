// model/gpt2.h: the GPT-2 model: configuration, parameters and forward pass. No c10d here.
// Owns: GPT2Config (+ validation), GPT2 (parameters as plain tensors under Hugging Face's names),
// init_gpt2 (GPT-2 initialisation), named_parameters, forward_logits / forward_loss.
// Written functionally (llm.c style) so that a pipeline stage is a GPT2 holding some of the blocks
// (layer_ids; wte/wpe only on the first stage, ln_f and a copy of the tied head on the last:
// undefined tensors are skipped), and so that tensor parallelism can replace the four linear
// calls of a block (see block_forward). Pieces: embed, run_blocks, head_loss.
// Shape letters: B batch, T time (sequence), C channels (n_embd), H heads, L layers,
// V vocabulary (from the tokenizer), Vp = V padded up to a multiple of vocab_pad.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace slm::model {

struct GPT2Config {
  int64_t n_layer = 4;       // L
  int64_t n_head = 4;        // H; must divide n_embd
  int64_t n_embd = 256;      // C
  int64_t block_size = 256;  // longest sequence (context); wpe has this many rows
  int64_t vocab_size = 0;    // V: the tokenizer's size (0 = take it from the data)
  int64_t vocab_pad = 128;   // Vp = V rounded up to a multiple of this (fast GEMMs)
  double dropout = 0.0;      // on attention weights, residual branches and embeddings
  bool recompute = false;    // recompute each block in backward instead of storing activations
  int64_t padded_vocab() const { return (vocab_size + vocab_pad - 1) / vocab_pad * vocab_pad; }
};

// Throws UserError with a one-line message naming the field, e.g. "model: n_head 3 must divide
// n_embd 256".
void validate(const GPT2Config& c);

struct Block {
  at::Tensor ln_1_w, ln_1_b;    // (C)
  at::Tensor c_attn_w;          // (3C, C)  q, k, v projections, torch (out, in) layout
  at::Tensor c_attn_b;          // (3C)
  at::Tensor attn_proj_w;       // (C, C)   residual projection: init std / sqrt(2L)
  at::Tensor attn_proj_b;       // (C)
  at::Tensor ln_2_w, ln_2_b;    // (C)
  at::Tensor c_fc_w, c_fc_b;    // (4C, C), (4C)
  at::Tensor mlp_proj_w;        // (C, 4C)  residual projection: init std / sqrt(2L)
  at::Tensor mlp_proj_b;        // (C)
};

// How the forward pass runs block i (0-based within h) on x (B, T, C). Empty = block_forward (or
// its recomputing variant) on h[i]. ZeRO-3 (parallel/zero3.cpp) sets it to gather the block's
// sharded parameters around the call; h then holds undefined tensors.
using BlockRunner = std::function<at::Tensor(size_t i, const at::Tensor& x, bool train)>;

struct GPT2 {
  GPT2Config cfg;
  BlockRunner run_block;      // see above
  at::Tensor wte;             // (Vp, C) token embedding, tied to the LM head
  at::Tensor wpe;             // (block_size, C) learned positions
  std::vector<Block> h;       // the blocks this model holds, in order
  std::vector<int64_t> layer_ids;  // global layer index of each h entry (0..L-1 for the whole model)
  at::Tensor ln_f_w, ln_f_b;  // (C)
  at::Tensor head;            // (Vp, C) LM head weight when it is not wte itself: a pipeline's last
                              // stage holds a copy of the first stage's wte (not a parameter here)
};

// GPT-2 initialisation: N(0, 0.02) for matrices and embeddings, N(0, 0.02/sqrt(2L)) for the two
// residual projections, zeros for biases, ones/zeros for LayerNorm. Deterministic given seed.
// Parameters are fp32 CPU tensors with requires_grad. keep_layer(l) = false leaves block l out
// (the random stream is the same, so the kept blocks equal the whole model's; a pipeline stage
// thus never holds the whole model).
GPT2 init_gpt2(const GPT2Config& c, uint64_t seed, const std::function<bool(int64_t)>& keep_layer = nullptr);

// The same structure with storage-free (meta) tensors: names and shapes of the whole model.
GPT2 shapes_only(const GPT2Config& c);

// Parameters by Hugging Face GPT2LMHeadModel name ("wte.weight", "h.3.attn.c_attn.weight", ...),
// skipping undefined ones. Tensors are shared, not copied.
std::vector<std::pair<std::string, at::Tensor>> named_parameters(const GPT2& m);
int64_t num_parameters(const GPT2& m);

// idx (B, T) int64 -> logits (B, T, V) over the real vocabulary (padding columns dropped).
at::Tensor forward_logits(const GPT2& m, const at::Tensor& idx, bool train);
// Mean next-token cross-entropy of idx (B, T) against targets (B, T).
at::Tensor forward_loss(const GPT2& m, const at::Tensor& idx, const at::Tensor& targets, bool train);

// Pieces, for stages and tests: embeddings (B, T) -> (B, T, C); blocks h[begin, end) (B, T, C) ->
// (B, T, C) (run_block, recomputation); final LayerNorm + head + mean cross-entropy; one block.
at::Tensor embed(const GPT2& m, const at::Tensor& idx, bool train, int64_t first_position = 0);
at::Tensor run_blocks(const GPT2& m, at::Tensor x, size_t begin, size_t end, bool train);
at::Tensor head_logits(const GPT2& m, const at::Tensor& x);  // (B, T, C) -> (B, T, V)
at::Tensor head_loss(const GPT2& m, const at::Tensor& x, const at::Tensor& targets);
at::Tensor block_forward(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train);
// The attention of a block's heads q, k, v (B, H, T, hd) -> (B, H, T, hd); empty = causal_attention
// (decoding with cached keys and values sets its own: model/kv_cache.h).
using Attend = std::function<at::Tensor(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v)>;
// The block on input x + d (d undefined: x) with its own output's residual add left to the caller:
// returns {out, delta}, the output being out + delta. run_blocks passes delta on, so that each
// residual add is made with the LayerNorm after it (add_layer_norm.h); the sums are the same.
std::pair<at::Tensor, at::Tensor> block_forward_deferred(const Block& b, const at::Tensor& x, const at::Tensor& d,
                                                         const GPT2Config& c, bool train, const Attend& attend = {});
// Causal self-attention of q, k, v (B, H, T, hd) -> (B, H, T, hd): slm's row kernels where
// prefer_causal_attention_rows says so (causal_attention.h), else SDPA where LibTorch has it, else
// the math path. head_loss is fused_linear_cross_entropy (fused_head.h) after the final LayerNorm.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout,
                            bool train);

}  // namespace slm::model
