// parallel/tensor/layers.cpp: see layers.h.
#include "parallel/tensor/layers.h"

#include <torch/torch.h>

#include <optional>

#include "model/add_layer_norm.h"
#include "model/bias_gelu.h"
#include "parallel/tensor/mappings.h"
#include "parallel/tensor/random.h"
#include "parallel/tensor/sequence_parallel_linear.h"

namespace slm::parallel::tensor {

model::Block shard_block(const model::Block& f, const model::GPT2Config& c, int rank, int tp) {
  const int64_t C = c.n_embd, Cl = C / tp, Fl = 4 * C / tp;
  auto leaf = [](const at::Tensor& t) { return t.detach().clone().contiguous().requires_grad_(true); };
  auto qkv_rows = [&](const at::Tensor& t) {  // this rank's rows of each of q, k, v
    return at::cat({t.narrow(0, rank * Cl, Cl), t.narrow(0, C + rank * Cl, Cl), t.narrow(0, 2 * C + rank * Cl, Cl)});
  };
  model::Block b;
  b.ln_1_w = leaf(f.ln_1_w), b.ln_1_b = leaf(f.ln_1_b);
  b.c_attn_w = leaf(qkv_rows(f.c_attn_w)), b.c_attn_b = leaf(qkv_rows(f.c_attn_b));
  b.attn_proj_w = leaf(f.attn_proj_w.narrow(1, rank * Cl, Cl)), b.attn_proj_b = leaf(f.attn_proj_b);
  b.ln_2_w = leaf(f.ln_2_w), b.ln_2_b = leaf(f.ln_2_b);
  b.c_fc_w = leaf(f.c_fc_w.narrow(0, rank * Fl, Fl)), b.c_fc_b = leaf(f.c_fc_b.narrow(0, rank * Fl, Fl));
  b.mlp_proj_w = leaf(f.mlp_proj_w.narrow(1, rank * Fl, Fl)), b.mlp_proj_b = leaf(f.mlp_proj_b);
  return b;
}

namespace {

// Dropout of an activation that every tp rank holds whole and alike (the default generator, in
// step on every rank), or of this rank's own part of one (the split regions' generator).
at::Tensor branch_dropout(const at::Tensor& x, double p, bool own_part) {
  if (p == 0) return x;
  std::optional<SplitRngScope> split;
  if (own_part) split.emplace(x.device());
  return at::dropout(x, p, /*train=*/true);
}

}  // namespace

std::pair<at::Tensor, at::Tensor> tp_block_forward_deferred(const model::Block& b, const at::Tensor& x,
                                                            const at::Tensor& d, const model::GPT2Config& c,
                                                            const TpSplit& split) {
  const comm::Group& tp = split.group;
  const bool sp = split.sequence_parallel();
  const double p = split.train ? c.dropout : 0.0;  // dropout in this forward (0 in evaluation)
  const int64_t Hl = c.n_head / tp.size, C = c.n_embd, Cl = C / tp.size;
  // A column-parallel linear (after f, or gathering the sequence's rows) and the way out of a
  // row-parallel one (g, or the reduce-scatter), from and to (B, T, C) whole or this rank's (N/tp, C)
  // token rows.
  const int64_t T = sp ? split.seq_len : x.size(1);
  const model::Linear column = [&](const at::Tensor& h, const at::Tensor& w, const at::Tensor& bias) {
    return sp ? sequence_parallel_linear(h, w, bias, T, tp) : at::linear(copy_to_tp(h, tp), w, bias);
  };
  const auto out_of = [&](const at::Tensor& y) { return sp ? reduce_scatter_rows(y, tp) : reduce_from_tp(y, tp); };
  // Attention: s + g(proj_local(attn(f(ln_1(s)) @ qkv_local))) + bias, s = x + d: the previous
  // block's residual add is made with the LayerNorm (model/add_layer_norm.h: one kernel on GPUs)
  auto [s, h] = model::add_layer_norm(x, d, b.ln_1_w, b.ln_1_b, 1e-5);
  auto parts = column(h, b.c_attn_w, b.c_attn_b).split(Cl, -1);  // 3 x (B, T, C/tp)
  const int64_t B = parts[0].size(0);
  auto heads = [&](const at::Tensor& t) { return t.view({B, T, Hl, Cl / Hl}).transpose(1, 2); };
  at::Tensor y;
  {
    std::optional<SplitRngScope> own_heads;  // this rank's heads: its own masks
    if (p > 0) own_heads.emplace(h.device());
    y = model::causal_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), p, p > 0);
  }
  y = y.transpose(1, 2).reshape({B, T, Cl});
  const at::Tensor attn = branch_dropout(out_of(at::linear(y, b.attn_proj_w)) + b.attn_proj_b, p, sp);
  // MLP: out + g(proj_local(gelu(f(ln_2(out)) @ fc_local))) + bias, out = s + attn
  auto [out, h2] = model::add_layer_norm(s, attn, b.ln_2_w, b.ln_2_b, 1e-5);
  const at::Tensor m = model::fc_gelu(h2, b.c_fc_w, b.c_fc_b, column);  // column-parallel: local bias
  return {out, branch_dropout(out_of(at::linear(m, b.mlp_proj_w)) + b.mlp_proj_b, p, sp)};
}

at::Tensor tp_block_forward(const model::Block& b, const at::Tensor& x, const model::GPT2Config& c,
                            const TpSplit& tp) {
  auto [out, delta] = tp_block_forward_deferred(b, x, at::Tensor(), c, tp);
  return out + delta;
}

}  // namespace slm::parallel::tensor
