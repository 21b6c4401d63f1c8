// tests/tools/tp_check.cpp: test helper run under `slm launch -n N` (N divides 4): a 2-block GPT-2
// computed tensor-parallel (sharded blocks chained with their residual adds deferred, vocabulary-parallel embedding, LM head and
// cross-entropy) against the same model computed whole on each rank. Checks the loss and every
// gradient slice to 1e-5 (relative where a value exceeds 1), and that tp_pieces (checkpoint coordinates) names exactly the slices
// apply_tensor_parallel takes; then the same with sequence parallelism (the token rows split between
// the linears), under bf16 autocast against plain tp, and the activations a block keeps with it;
// recomputation's gradients (with and without sequence parallelism) against stored activations';
// dropout's random streams (check_dropout).
// Prints "rank R ok" or exits non-zero naming the mismatch.
#include <torch/torch.h>

#include <malloc.h>
#if defined(__SANITIZE_ADDRESS__)
#define SLM_ASAN_HEAP 1
extern "C" size_t __sanitizer_get_current_allocated_bytes();  // the ASan runtime's (g++ has no header for it)
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <fmt/format.h>

#include "comm/collectives.h"
#include "comm/mesh.h"
#include "comm/world.h"
#include "model/autocast.h"
#include "model/gpt2.h"
#include "parallel/tensor/cross_entropy.h"
#include "parallel/tensor/layers.h"
#include "parallel/tensor/mappings.h"
#include "parallel/tensor/model.h"
#include "parallel/tensor/random.h"

using namespace slm;

// The heap bytes in use (glibc: small blocks and mmapped ones; under AddressSanitizer, whose
// allocator glibc's counters do not see, its own count: scripts/sanitize.sh).
static double heap_bytes() {
#ifdef SLM_ASAN_HEAP
  return static_cast<double>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
#endif
}

// The same once it stops changing: Gloo's worker threads let go of a collective's tensors (and of
// the autograd graph an output holds) a moment after its wait returns.
static double settled_heap_bytes() {
  double now = heap_bytes();
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const double next = heap_bytes();
    if (next == now) break;
    now = next;
  }
  return now;
}

// What one block's forward leaves allocated (its output and what autograd keeps for backward).
static double kept_by_block(const model::Block& b, const at::Tensor& x, const model::GPT2Config& c,
                            const parallel::tensor::TpSplit& split) {
  (void)parallel::tensor::tp_block_forward(b, x, c, split);  // warm-up: the libraries' first-use buffers
  const double before = settled_heap_bytes();
  const at::Tensor out = parallel::tensor::tp_block_forward(b, x, c, split);
  return settled_heap_bytes() - before;
}

// Sequence parallelism keeps 1/tp of a block's activations outside its linears, the column-parallel
// linears' inputs too: four (N, C) activations (the linears' two inputs, the second LayerNorm's
// input, the output) become (N/tp, C). Keeping the linears' gathered inputs would save only half that.
static int check_sp_memory(int r, int n, const comm::Group& tp) {
  if (n == 1) return 0;  // nothing to split
  model::GPT2Config c;
  c.n_layer = 1, c.n_head = 4, c.n_embd = 256, c.block_size = 256, c.vocab_size = 100;
  const model::Block b = parallel::tensor::shard_block(model::init_gpt2(c, 7).h[0], c, r, n);
  const int64_t B = 4, T = c.block_size, N = B * T, C = c.n_embd;
  const at::Tensor x = at::randn({B, T, C}).requires_grad_(true);
  const at::Tensor mine = x.detach().reshape({N, C}).narrow(0, r * N / n, N / n).clone().requires_grad_(true);
  const double plain = kept_by_block(b, x, c, tp), split = kept_by_block(b, mine, c, {tp, T});
  const double activation = static_cast<double>(N * C * 4), want = 4 * activation * (n - 1) / n;
  std::printf("rank %d: a block keeps %.2f MiB under tp %d, %.2f MiB sequence parallel (%.2f MiB less; %.2f expected)\n",
              r, plain / (1 << 20), n, split / (1 << 20), (plain - split) / (1 << 20), want / (1 << 20));
  if (plain - split > 0.75 * want) return 0;
  std::fprintf(stderr, "rank %d: sequence parallelism keeps %.2f MiB of %.2f MiB, not %.2f MiB less\n", r,
               split / (1 << 20), plain / (1 << 20), want / (1 << 20));
  return 1;
}

// Whether x is the same on every rank of g.
static bool same_on_every_rank(const at::Tensor& x, const comm::Group& g) {
  at::Tensor most = x.clone(), least = -x;
  comm::all_reduce_max(most, g);
  comm::all_reduce_max(least, g);
  return most.equal(x) && (-least).equal(x);
}

// Dropout under tp (parallel/tensor/random.h): the split regions' stream differs between tp ranks
// and leaves the default stream as it was; a training step with dropout keeps the replicated
// activations equal on every rank (their parameters' gradients too), with and without sequence
// parallelism, and runs again the same from the same seed.
static int check_dropout(model::GPT2Config c, const at::Tensor& idx, const at::Tensor& tgt, int r, const comm::Group& tp) {
  int bad = 0;
  auto fail = [&](const std::string& what) { std::fprintf(stderr, "rank %d: dropout: %s\n", r, what.c_str()), bad = 1; };
  at::manual_seed(11);
  parallel::tensor::seed_split_rng(11, r);
  const at::Tensor a = at::rand({4});
  at::Tensor own;
  {
    parallel::tensor::SplitRngScope scope(at::Device(at::kCPU));
    own = at::rand({4});
  }
  const at::Tensor b = at::rand({4});
  at::manual_seed(11);
  if (!(at::rand({4}).equal(a) && at::rand({4}).equal(b))) fail("the split stream moved the default one");
  if (!same_on_every_rank(a, tp) || (tp.size > 1 && same_on_every_rank(own, tp))) fail("streams not as documented");
  c.dropout = 0.2;
  auto sharded = [&] {
    model::GPT2 m = model::init_gpt2(c, 7);
    parallel::tensor::apply_tensor_parallel(m, tp);
    return m;
  };
  for (const bool sp : {false, true}) {
    double losses[2];
    for (double& loss : losses) {
      const model::GPT2 m = sharded();
      at::manual_seed(5);
      parallel::tensor::seed_split_rng(5, r);
      const at::Tensor l = parallel::tensor::forward_loss(m, idx, tgt, tp, sp, /*train=*/true);
      l.backward();
      loss = l.item<double>();
      // Sequence parallel: every dropout falls on a rank's own rows or heads, none on the default stream.
      const at::Tensor next = at::rand({4});
      at::manual_seed(5);
      if (sp && tp.size > 1 && !at::rand({4}).equal(next)) fail("sequence parallel dropout drew from the default stream");
      if (!same_on_every_rank(l.detach(), tp)) fail("the loss differs between tp ranks");
      for (const auto& [name, t] : model::named_parameters(m))
        if (parallel::tensor::replicated_over_tp(name) && !sp && !same_on_every_rank(t.grad(), tp))
          fail(name + "'s gradient differs between tp ranks (the ranks' masks of a replicated activation differ)");
    }
    if (losses[0] != losses[1]) fail(fmt::format("the same seed gave losses {} and {}", losses[0], losses[1]));
    const double eval = parallel::tensor::forward_loss(sharded(), idx, tgt, tp, sp, false).item<double>();
    if (losses[0] == eval) fail("training and evaluation gave the same loss: no dropout");
  }
  return bad;
}

int main() {
  comm::World w = comm::init_world(comm::DistConfig{}, "cpu");
  comm::ProcessGroups pg = comm::make_process_groups(w, {{"tp"}, {w.world.size}});
  const comm::Group& tp = pg.tp;
  const int r = tp.rank, n = tp.size;
  model::GPT2Config c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 64, c.block_size = 16, c.vocab_size = 100, c.vocab_pad = 64;
  model::GPT2 full = model::init_gpt2(c, 7);
  at::manual_seed(3);
  at::Tensor idx = at::randint(c.vocab_size, {2, 16}), tgt = at::randint(c.vocab_size, {2, 16});
  at::Tensor ref = model::forward_loss(full, idx, tgt, false);
  ref.backward();

  auto [start, nv] = parallel::tensor::vocab_range(c.padded_vocab(), r, n);
  auto leaf = [](const at::Tensor& t) { return t.detach().clone().requires_grad_(true); };
  at::Tensor wte = leaf(full.wte.narrow(0, start, nv)), wpe = leaf(full.wpe);
  at::Tensor lnw = leaf(full.ln_f_w), lnb = leaf(full.ln_f_b);
  model::GPT2 blocks;  // this rank's slices of the two blocks
  blocks.cfg = c;
  for (const model::Block& f : full.h) blocks.h.push_back(parallel::tensor::shard_block(f, c, r, n));
  at::Tensor x = parallel::tensor::vocab_parallel_embedding(idx, wte, start, tp) +
                 at::embedding(wpe, at::arange(16, at::kLong));
  x = parallel::tensor::run_blocks(blocks, x, 0, blocks.h.size(), tp);
  x = at::layer_norm(x, {c.n_embd}, lnw, lnb, 1e-5);
  at::Tensor logits = at::linear(parallel::tensor::copy_to_tp(x, tp), wte);  // (B, T, Vp/tp)
  at::Tensor loss = parallel::tensor::vocab_parallel_cross_entropy(logits.reshape({-1, nv}), tgt.reshape({-1}),
                                                                    start, c.vocab_size, tp);
  loss.backward();

  int bad = 0;
  auto check = [&](const char* what, const at::Tensor& got, const at::Tensor& want) {
    // fp32 to 1e-5 of the value's size (at least 1e-5 absolute): the loss (~4.6) came out 1.4e-5
    // apart once in three runs with PyPI's 2.15 on an AMX Xeon (30 ulps; summation orders differ).
    const double d = (got - want).abs().max().item<double>(), size = std::max(1.0, want.abs().max().item<double>());
    if (!(d < 1e-5 * size)) std::fprintf(stderr, "rank %d: %s differs by %g\n", r, what, d), bad = 1;
  };
  check("loss", loss, ref);
  const int64_t C = c.n_embd, Cl = C / n, Fl = 4 * C / n;
  auto qkv = [&](const at::Tensor& t) {
    return at::cat({t.narrow(0, r * Cl, Cl), t.narrow(0, C + r * Cl, Cl), t.narrow(0, 2 * C + r * Cl, Cl)});
  };
  check("wte grad", wte.grad(), full.wte.grad().narrow(0, start, nv));
  check("wpe grad", wpe.grad(), full.wpe.grad());
  check("ln_f grad", lnw.grad(), full.ln_f_w.grad());
  for (size_t i = 0; i < full.h.size(); ++i) {
    const model::Block &b = blocks.h[i], &g = full.h[i];
    auto grad = [&](const char* what, const at::Tensor& got, const at::Tensor& want) {
      check(fmt::format("h.{}.{} grad", i, what).c_str(), got, want);
    };
    grad("ln_1", b.ln_1_w.grad(), g.ln_1_w.grad());
    grad("c_attn.weight", b.c_attn_w.grad(), qkv(g.c_attn_w.grad()));
    grad("c_attn.bias", b.c_attn_b.grad(), qkv(g.c_attn_b.grad()));
    grad("attn.c_proj.weight", b.attn_proj_w.grad(), g.attn_proj_w.grad().narrow(1, r * Cl, Cl));
    grad("attn.c_proj.bias", b.attn_proj_b.grad(), g.attn_proj_b.grad());
    grad("mlp.c_fc.weight", b.c_fc_w.grad(), g.c_fc_w.grad().narrow(0, r * Fl, Fl));
    grad("mlp.c_fc.bias", b.c_fc_b.grad(), g.c_fc_b.grad().narrow(0, r * Fl, Fl));
    grad("mlp.c_proj.weight", b.mlp_proj_w.grad(), g.mlp_proj_w.grad().narrow(1, r * Fl, Fl));
    grad("mlp.c_proj.bias", b.mlp_proj_b.grad(), g.mlp_proj_b.grad());
    grad("ln_2", b.ln_2_b.grad(), g.ln_2_b.grad());
  }
  // tp_pieces (checkpoints) must describe exactly the slices shard_block / apply_tensor_parallel take.
  model::GPT2 sharded = model::init_gpt2(c, 7);
  parallel::tensor::apply_tensor_parallel(sharded, tp);
  const auto whole = model::named_parameters(full), local = model::named_parameters(sharded);
  for (size_t i = 0; i < local.size(); ++i) {
    auto pieces = parallel::tensor::tp_pieces(local[i].first, c, r, n);
    int64_t covered = 0;
    for (const auto& p : pieces) {
      check(local[i].first.c_str(), local[i].second.detach().reshape({-1}).narrow(0, p.local, p.size),
            whole[i].second.detach().reshape({-1}).narrow(0, p.global, p.size));
      covered += p.size;
    }
    if (pieces.empty() ? !local[i].second.equal(whole[i].second) : covered != local[i].second.numel())
      std::fprintf(stderr, "rank %d: tp_pieces of %s do not cover its slice\n", r, local[i].first.c_str()), bad = 1;
  }
  // Sequence parallelism: the same loss, and every gradient slice once the replicated parameters'
  // gradients (each rank saw only its tokens) are summed over tp, as finish_grads does.
  const at::Tensor sp_loss = parallel::tensor::forward_loss(sharded, idx, tgt, tp, /*sp=*/true);
  sp_loss.backward();
  check("sequence-parallel loss", sp_loss, ref);
  for (size_t i = 0; i < local.size(); ++i) {
    at::Tensor g = local[i].second.grad().clone();
    if (parallel::tensor::replicated_over_tp(local[i].first)) comm::all_reduce_sum(g, tp);
    const at::Tensor want = whole[i].second.grad().reshape({-1});
    auto pieces = parallel::tensor::tp_pieces(local[i].first, c, r, n);
    if (pieces.empty()) pieces.push_back({0, 0, want.numel()});
    for (const auto& p : pieces)
      check(("sequence-parallel " + local[i].first + " grad").c_str(), g.reshape({-1}).narrow(0, p.local, p.size),
            want.narrow(0, p.global, p.size));
  }
  // Under bf16 autocast the sequence-parallel linears cast their rows before gathering them: the
  // loss plain tp computes, within bf16's rounding.
  {
    model::GPT2 plain = model::init_gpt2(c, 7), split = model::init_gpt2(c, 7);
    parallel::tensor::apply_tensor_parallel(plain, tp);
    parallel::tensor::apply_tensor_parallel(split, tp);
    model::AutocastGuard bf16("bf16", "cpu");
    const at::Tensor a = parallel::tensor::forward_loss(plain, idx, tgt, tp, false);
    const at::Tensor b = parallel::tensor::forward_loss(split, idx, tgt, tp, true);
    a.backward(), b.backward();
    const at::Tensor &ga = plain.h[0].c_fc_w.grad(), &gb = split.h[0].c_fc_w.grad();
    const double d = (a - b).abs().item<double>(), dg = (ga - gb).abs().max().item<double>() / ga.abs().max().item<double>();
    if (!(d < 2e-2 && dg < 2e-2))
      std::fprintf(stderr, "rank %d: bf16 sequence parallel: loss %g apart, mlp.c_fc.weight grad %g\n", r, d, dg), bad = 1;
  }
  // Recomputation (model.recompute): each block reruns, collectives included, in backward; the
  // same gradients as storing the activations, with and without sequence parallelism.
  for (const bool sp : {false, true}) {
    model::GPT2 kept = model::init_gpt2(c, 7), rerun = model::init_gpt2(c, 7);
    rerun.cfg.recompute = true;
    parallel::tensor::apply_tensor_parallel(kept, tp);
    parallel::tensor::apply_tensor_parallel(rerun, tp);
    const at::Tensor a = parallel::tensor::forward_loss(kept, idx, tgt, tp, sp);
    const at::Tensor b = parallel::tensor::forward_loss(rerun, idx, tgt, tp, sp);
    a.backward(), b.backward();
    const std::string what = sp ? "recomputed sequence-parallel " : "recomputed ";
    check((what + "loss").c_str(), b, a);
    const auto want = model::named_parameters(kept), got = model::named_parameters(rerun);
    for (size_t i = 0; i < got.size(); ++i)
      check((what + got[i].first + " grad").c_str(), got[i].second.grad(), want[i].second.grad());
  }
  bad |= check_sp_memory(r, n, tp);
  bad |= check_dropout(c, idx, tgt, r, tp);
  if (bad) return 1;
  std::printf("rank %d ok (loss %.6f)\n", r, loss.item<double>());
  return 0;
}
