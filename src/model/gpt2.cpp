// model/gpt2.cpp: see gpt2.h.
#include "model/gpt2.h"

#include <torch/torch.h>
#include "util/torch_compat.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <fmt/format.h>

#include "model/add_layer_norm.h"
#include "model/bias_gelu.h"
#include "model/causal_attention.h"
#include "model/fused_head.h"
#include "model/gpu_attention.h"
#include "model/recompute.h"
#include "util/error.h"

namespace slm::model {

void validate(const GPT2Config& c) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UserError("model: " + msg);
  };
  // Upper bounds far beyond GPT-2's sizes, so that no product of them (a layer's parameters, a
  // sequence's activations, the head's logits) leaves int64; token ids are int32.
  auto in = [&](const char* name, int64_t v, int64_t hi) {
    need(v >= 1 && v <= hi, fmt::format("{} {} must be from 1 to {}", name, v, hi));
  };
  in("n_layer", c.n_layer, int64_t{1} << 16);
  in("n_head", c.n_head, int64_t{1} << 20);
  in("n_embd", c.n_embd, int64_t{1} << 20);
  need(c.n_embd % c.n_head == 0, fmt::format("n_head {} must divide n_embd {}", c.n_head, c.n_embd));
  in("block_size", c.block_size, int64_t{1} << 24);
  in("vocab_size", c.vocab_size, std::numeric_limits<int32_t>::max());
  in("vocab_pad", c.vocab_pad, int64_t{1} << 20);
  need(c.dropout >= 0 && c.dropout < 1, fmt::format("dropout {} must be in [0, 1)", c.dropout));
  need(!(c.recompute && c.dropout > 0), "recompute with dropout > 0 is not supported yet");
}

GPT2 init_gpt2(const GPT2Config& c, uint64_t seed, const std::function<bool(int64_t)>& keep_layer) {
  validate(c);
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  const int64_t C = c.n_embd;
  const double std = 0.02, proj_std = 0.02 / std::sqrt(2.0 * c.n_layer);
  auto normal = [&](std::vector<int64_t> shape, double s) {
    return at::empty(shape, at::kFloat).normal_(0.0, s, gen).requires_grad_(true);
  };
  auto zeros = [](int64_t n) { return at::zeros({n}, at::kFloat).requires_grad_(true); };
  auto ones = [](int64_t n) { return at::ones({n}, at::kFloat).requires_grad_(true); };
  GPT2 m;
  m.cfg = c;
  m.wte = normal({c.padded_vocab(), C}, std);
  m.wpe = normal({c.block_size, C}, std);
  at::Tensor scratch;  // skipped blocks draw their numbers into it
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (keep_layer && !keep_layer(l)) {
      if (!scratch.defined()) scratch = at::empty({4 * C * C}, at::kFloat);
      for (int64_t n : {3 * C * C, C * C, 4 * C * C, 4 * C * C})
        scratch.narrow(0, 0, n).normal_(0.0, 1.0, gen);
      continue;
    }
    Block b;
    b.ln_1_w = ones(C), b.ln_1_b = zeros(C);
    b.c_attn_w = normal({3 * C, C}, std), b.c_attn_b = zeros(3 * C);
    b.attn_proj_w = normal({C, C}, proj_std), b.attn_proj_b = zeros(C);
    b.ln_2_w = ones(C), b.ln_2_b = zeros(C);
    b.c_fc_w = normal({4 * C, C}, std), b.c_fc_b = zeros(4 * C);
    b.mlp_proj_w = normal({C, 4 * C}, proj_std), b.mlp_proj_b = zeros(C);
    m.h.push_back(std::move(b));
    m.layer_ids.push_back(l);
  }
  m.ln_f_w = ones(C), m.ln_f_b = zeros(C);
  return m;
}

GPT2 shapes_only(const GPT2Config& c) {
  auto e = [](std::vector<int64_t> shape) { return at::empty(shape, at::TensorOptions().device(at::kMeta)); };
  const int64_t C = c.n_embd;
  GPT2 m;
  m.cfg = c;
  m.wte = e({c.padded_vocab(), C}), m.wpe = e({c.block_size, C});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    m.h.push_back({e({C}), e({C}), e({3 * C, C}), e({3 * C}), e({C, C}), e({C}), e({C}), e({C}), e({4 * C, C}),
                   e({4 * C}), e({C, 4 * C}), e({C})});
    m.layer_ids.push_back(l);
  }
  m.ln_f_w = e({C}), m.ln_f_b = e({C});
  return m;
}

std::vector<std::pair<std::string, at::Tensor>> named_parameters(const GPT2& m) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  auto add = [&](std::string name, const at::Tensor& t) {
    if (t.defined()) out.emplace_back(std::move(name), t);
  };
  add("wte.weight", m.wte);
  add("wpe.weight", m.wpe);
  for (size_t i = 0; i < m.h.size(); ++i) {
    const Block& b = m.h[i];
    const std::string p = fmt::format("h.{}.", m.layer_ids.at(i));
    add(p + "ln_1.weight", b.ln_1_w), add(p + "ln_1.bias", b.ln_1_b);
    add(p + "attn.c_attn.weight", b.c_attn_w), add(p + "attn.c_attn.bias", b.c_attn_b);
    add(p + "attn.c_proj.weight", b.attn_proj_w), add(p + "attn.c_proj.bias", b.attn_proj_b);
    add(p + "ln_2.weight", b.ln_2_w), add(p + "ln_2.bias", b.ln_2_b);
    add(p + "mlp.c_fc.weight", b.c_fc_w), add(p + "mlp.c_fc.bias", b.c_fc_b);
    add(p + "mlp.c_proj.weight", b.mlp_proj_w), add(p + "mlp.c_proj.bias", b.mlp_proj_b);
  }
  add("ln_f.weight", m.ln_f_w);
  add("ln_f.bias", m.ln_f_b);
  return out;
}

int64_t num_parameters(const GPT2& m) {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters(m)) n += t.numel();
  return n;
}

at::Tensor embed(const GPT2& m, const at::Tensor& idx, bool train, int64_t first_position) {
  const int64_t T = idx.size(1);
  TORCH_CHECK(first_position + T <= m.cfg.block_size, "sequence length ", first_position + T, " > block_size ",
              m.cfg.block_size);
  at::Tensor pos = at::arange(first_position, first_position + T, idx.options().dtype(at::kLong));
  at::Tensor x = at::embedding(m.wte, idx) + at::embedding(m.wpe, pos);  // (B, T, C)
  return at::dropout(x, m.cfg.dropout, train);
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout,
                            bool train) {
  if ((dropout == 0 || !train) && prefer_causal_attention_rows(q, k, v)) return causal_attention_rows(q, k, v);
#if SLM_TORCH_AT_LEAST(2, 0)  // compat::kHasSdpa
  if (q.is_cuda()) return gpu_attention(q, k, v, dropout, train);  // the measured fastest fused kernel
  return at::scaled_dot_product_attention(q, k, v, {}, train ? dropout : 0.0, /*is_causal=*/true);
#else
  const int64_t T = q.size(2);
  at::Tensor att = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(q.size(-1))));
  at::Tensor mask = at::ones({T, T}, q.options().dtype(at::kBool)).triu(1);  // future positions
  att = at::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1);
  att = at::dropout(att, dropout, train);
  return at::matmul(att, v);
#endif
}

std::pair<at::Tensor, at::Tensor> block_forward_deferred(const Block& b, const at::Tensor& x, const at::Tensor& d,
                                                         const GPT2Config& c, bool train, const Attend& attend) {
  const int64_t H = c.n_head;
  // Attention: s + proj(attn(ln_1(s))), s = x + d: the previous block's residual add is made here,
  // with the LayerNorm after it (model/add_layer_norm.h: one kernel on GPUs)
  auto [s, h] = add_layer_norm(x, d, b.ln_1_w, b.ln_1_b, 1e-5);
  const int64_t B = s.size(0), T = s.size(1), C = s.size(2);
  at::Tensor qkv = at::linear(h, b.c_attn_w, b.c_attn_b);  // (B, T, 3C)
  auto parts = qkv.split(C, -1);
  auto heads = [&](const at::Tensor& t) { return t.view({B, T, H, C / H}).transpose(1, 2); };
  at::Tensor y = attend ? attend(heads(parts[0]), heads(parts[1]), heads(parts[2]))
                        : causal_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), c.dropout, train);
  y = y.transpose(1, 2).reshape({B, T, C});
  at::Tensor attn = at::dropout(at::linear(y, b.attn_proj_w, b.attn_proj_b), c.dropout, train);
  // MLP: out + proj(gelu_tanh(fc(ln_2(out)))), out = s + attn
  auto [out, h2] = add_layer_norm(s, attn, b.ln_2_w, b.ln_2_b, 1e-5);
  at::Tensor m = fc_gelu(h2, b.c_fc_w, b.c_fc_b);  // gelu_tanh(linear(...)); one kernel with the bias on GPUs
  return {out, at::dropout(at::linear(m, b.mlp_proj_w, b.mlp_proj_b), c.dropout, train)};
}

at::Tensor block_forward(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train) {
  auto [out, delta] = block_forward_deferred(b, x, at::Tensor(), c, train);
  return out + delta;
}

at::Tensor run_blocks(const GPT2& m, at::Tensor x, size_t begin, size_t end, bool train) {
  if (!m.run_block && !(m.cfg.recompute && train && x.requires_grad())) {
    at::Tensor d;  // the last block's output is x + d: its residual add waits for the next LayerNorm
    for (size_t i = begin; i < end; ++i) std::tie(x, d) = block_forward_deferred(m.h[i], x, d, m.cfg, train);
    return d.defined() ? x + d : x;
  }
  for (size_t i = begin; i < end; ++i)
    x = m.run_block ? m.run_block(i, x, train) : block_forward_recompute(m.h[i], x, m.cfg, train);
  return x;
}

at::Tensor head_logits(const GPT2& m, const at::Tensor& x_in) {
  at::Tensor x = at::layer_norm(x_in, {m.cfg.n_embd}, m.ln_f_w, m.ln_f_b, 1e-5);
  at::Tensor logits = at::linear(x, m.head.defined() ? m.head : m.wte);  // (B, T, Vp), tied to wte
  return logits.narrow(-1, 0, m.cfg.vocab_size);
}

at::Tensor head_loss(const GPT2& m, const at::Tensor& x_in, const at::Tensor& targets) {
  const at::Tensor& w = m.head.defined() ? m.head : m.wte;  // (Vp, C); the padding rows take no part
  const int64_t C = m.cfg.n_embd;
  at::Tensor x = at::layer_norm(x_in, {C}, m.ln_f_w, m.ln_f_b, 1e-5);
  return fused_linear_cross_entropy(x.reshape({-1, C}), w, m.cfg.vocab_size, targets.reshape({-1}));
}

at::Tensor forward_logits(const GPT2& m, const at::Tensor& idx, bool train) {
  return head_logits(m, run_blocks(m, embed(m, idx, train), 0, m.h.size(), train));
}

at::Tensor forward_loss(const GPT2& m, const at::Tensor& idx, const at::Tensor& targets, bool train) {
  return head_loss(m, run_blocks(m, embed(m, idx, train), 0, m.h.size(), train), targets);
}

}  // namespace slm::model
