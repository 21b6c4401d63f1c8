// parallel/tensor/model.cpp: see model.h.
#include "parallel/tensor/model.h"

#include <torch/torch.h>

#include <cstring>
#include <tuple>
#include <fmt/format.h>

#include "model/recompute.h"
#include "parallel/tensor/cross_entropy.h"
#include "parallel/tensor/layers.h"
#include "parallel/tensor/mappings.h"
#include "parallel/tensor/random.h"
#include "util/error.h"

namespace slm::parallel::tensor {

void validate_tp(const model::GPT2Config& c, int tp, int64_t sp_seq_len) {
  if (tp == 1) return;
  if (sp_seq_len > 0 && sp_seq_len % tp != 0)
    throw UserError(fmt::format("parallel: sequence_parallel needs tp({}) to divide the sequence length {}", tp,
                                sp_seq_len));
  if (c.n_head % tp != 0) throw UserError(fmt::format("parallel: tp({}) must divide model.n_head({})", tp, c.n_head));
  if (c.padded_vocab() % tp != 0)
    throw UserError(fmt::format("parallel: tp({}) must divide the padded vocabulary {} (model.vocab_pad)", tp,
                                c.padded_vocab()));
}

void apply_tensor_parallel(model::GPT2& m, const comm::Group& tp) {
  if (tp.size == 1) return;
  for (model::Block& b : m.h) b = shard_block(b, m.cfg, tp.rank, tp.size);
  auto [start, n] = vocab_range(m.cfg.padded_vocab(), tp.rank, tp.size);
  for (at::Tensor* w : {&m.wte, &m.head})
    if (w->defined()) *w = w->detach().narrow(0, start, n).clone().requires_grad_(w->requires_grad());
}

at::Tensor embed(const model::GPT2& m, const at::Tensor& idx, const TpSplit& split) {
  const comm::Group& tp = split.group;
  const int64_t start = vocab_range(m.cfg.padded_vocab(), tp.rank, tp.size).first;
  const at::Tensor positions = at::arange(idx.size(1), idx.options().dtype(at::kLong));
  const double p = split.train ? m.cfg.dropout : 0.0;
  if (!split.sequence_parallel())  // (B, T, C) on every rank: the default generator's masks (random.h)
    return at::dropout(vocab_parallel_embedding(idx, m.wte, start, tp) + at::embedding(m.wpe, positions), p, p > 0);
  // This rank's token rows of the summed lookups, plus the positions of those rows; its own masks.
  const int64_t n = idx.numel() / tp.size, T = idx.size(1);
  const at::Tensor mine = at::arange(tp.rank * n, (tp.rank + 1) * n, positions.options()).remainder(T);
  const at::Tensor x = reduce_scatter_rows(vocab_parallel_lookup(idx, m.wte, start), tp) + at::embedding(m.wpe, mine);
  if (p == 0) return x;
  SplitRngScope own_rows(x.device());
  return at::dropout(x, p, /*train=*/true);
}

namespace {

// tp_block_forward as a BlockRun: context = {the tp group's address, the sequence length under
// sequence parallelism or 0}.
at::Tensor run_tp_block(const model::Block& b, const at::Tensor& x, const model::GPT2Config& c, bool train,
                        const std::vector<int64_t>& context) {
  return tp_block_forward(b, x, c, TpSplit(*reinterpret_cast<const comm::Group*>(context[0]), context[1], train));
}

}  // namespace

model::BlockRun tp_block_run() { return run_tp_block; }

std::vector<int64_t> tp_block_context(const TpSplit& split) {
  return {reinterpret_cast<int64_t>(&split.group), split.seq_len};
}

at::Tensor run_blocks(const model::GPT2& m, at::Tensor x, size_t begin, size_t end, const TpSplit& tp) {
  if (m.run_block) {  // ZeRO 3: gathered around the tp block (parallel/zero3.cpp)
    for (size_t i = begin; i < end; ++i) x = m.run_block(i, x, tp.train);
    return x;
  }
  if (m.cfg.recompute && x.requires_grad()) {  // each block keeps its input; its collectives rerun in backward
    for (size_t i = begin; i < end; ++i)
      x = model::block_forward_recompute(m.h[i], x, m.cfg, tp.train, tp_block_run(), tp_block_context(tp));
    return x;
  }
  at::Tensor d;  // the last block's output is x + d: its residual add waits for the next LayerNorm
  for (size_t i = begin; i < end; ++i) std::tie(x, d) = tp_block_forward_deferred(m.h[i], x, d, m.cfg, tp);
  return d.defined() ? x + d : x;
}

at::Tensor head_loss(const model::GPT2& m, const at::Tensor& x_in, const at::Tensor& targets, const TpSplit& split) {
  const comm::Group& tp = split.group;
  const int64_t start = vocab_range(m.cfg.padded_vocab(), tp.rank, tp.size).first;
  at::Tensor x = at::layer_norm(x_in, {m.cfg.n_embd}, m.ln_f_w, m.ln_f_b, 1e-5);
  const at::Tensor& w = m.head.defined() ? m.head : m.wte;
  x = split.sequence_parallel() ? gather_rows(x, tp) : copy_to_tp(x, tp);  // every token, on every rank
  at::Tensor logits = at::linear(x, w);  // (B, T, Vp/tp) or (B·T, Vp/tp): this rank's columns
  return vocab_parallel_cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), start,
                                      m.cfg.vocab_size, tp);
}

at::Tensor forward_loss(const model::GPT2& m, const at::Tensor& idx, const at::Tensor& targets,
                        const comm::Group& tp, bool sp, bool train) {
  const TpSplit split(tp, sp ? idx.size(1) : 0, train);
  return head_loss(m, run_blocks(m, embed(m, idx, split), 0, m.h.size(), split), targets, split);
}

bool replicated_over_tp(const std::string& name) {
  for (const char* sharded : {"wte.weight", "c_attn.weight", "c_attn.bias", "attn.c_proj.weight",
                              "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight"})
    if (name.size() >= std::strlen(sharded) && name.compare(name.size() - std::strlen(sharded), std::string::npos, sharded) == 0)
      return false;
  return true;
}

std::vector<Segment> tp_pieces(const std::string& name, const model::GPT2Config& c, int rank, int tp) {
  const int64_t C = c.n_embd, Cl = C / tp, F = 4 * C, Fl = F / tp;
  auto ends = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  std::vector<Segment> out;
  if (tp > 1 && ends("wte.weight")) {
    auto [start, n] = vocab_range(c.padded_vocab(), rank, tp);
    out.push_back({0, start * C, n * C});
  } else if (tp > 1 && ends("c_attn.weight")) {
    for (int64_t k = 0; k < 3; ++k) out.push_back({k * Cl * C, (k * C + rank * Cl) * C, Cl * C});
  } else if (tp > 1 && ends("c_attn.bias")) {
    for (int64_t k = 0; k < 3; ++k) out.push_back({k * Cl, k * C + rank * Cl, Cl});
  } else if (tp > 1 && ends("attn.c_proj.weight")) {
    for (int64_t j = 0; j < C; ++j) out.push_back({j * Cl, j * C + rank * Cl, Cl});
  } else if (tp > 1 && ends("mlp.c_fc.weight")) {
    out.push_back({0, rank * Fl * C, Fl * C});
  } else if (tp > 1 && ends("mlp.c_fc.bias")) {
    out.push_back({0, rank * Fl, Fl});
  } else if (tp > 1 && ends("mlp.c_proj.weight")) {
    for (int64_t j = 0; j < C; ++j) out.push_back({j * Fl, j * F + rank * Fl, Fl});
  }
  return out;  // empty: the parameter is not split (the caller uses one whole piece)
}

}  // namespace slm::parallel::tensor
