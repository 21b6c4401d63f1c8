// parallel/zero3.cpp: ZeRO stage 3 (see data_parallel.h): parameters sharded by unit, gathered
// per block around its forward and its recomputed backward, gradients reduce-scattered.
// The blocks' collectives sit in an autograd Function, ShardedBlock: forward gather + block +
// free; backward gather + recompute + reduce-scatter. The embeddings and final LayerNorm are
// gathered once per training step into leaves (`kept`) whose gradients finish_grads
// reduce-scatters. With tensor parallelism the units are this tp rank's slices (the layout is the
// tp-split model's), sharded over its dp group; the blocks run as tp blocks (their collectives
// rerun in backward), and the embedding and head are the vocabulary-parallel ones
// (parallel/tensor/model.h). With pipeline stages the units are those of this rank's stage.
#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "model/recompute.h"
#include "parallel/data_parallel_impl.h"
#include "parallel/tensor/model.h"
#include "util/error.h"

namespace slm::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

DataParallel* state_of(AutogradContext* ctx) {
  return reinterpret_cast<DataParallel*>(ctx->saved_data["dp"].toInt());
}

at::Tensor own_piece(DataParallel& d, size_t u) { return d.own.narrow(0, d.units[u].local, d.units[u].piece); }

// A (ranks * piece) buffer for unit u: one of d.buffers that no tensor views any more, else a new
// one kept there. Allocated afresh for every gather and reduction, block-sized buffers leave
// holes all over glibc's heap, which keeps them (the malloc thresholds are set for speed):
// measured, the main arena ended a step ~360 MB larger (docs/benchmarks.md, ZeRO memory).
at::Tensor unit_buffer(DataParallel& d, size_t u) {
  const int64_t n = d.units[u].piece * d.zg.size;
  for (const at::Tensor& b : d.buffers)
    if (b.storage().use_count() == 1 && b.numel() >= n) return b.narrow(0, 0, n);
  d.buffers.push_back(at::empty({n}, d.own.options().requires_grad(false)));
  return d.buffers.back();
}

// Starts gathering unit u into a (ranks * piece) buffer.
std::pair<at::Tensor, comm::Pending> start_gather(DataParallel& d, size_t u) {
  at::Tensor full = unit_buffer(d, u);
  comm::Pending p = comm::all_gather_into_async(full, own_piece(d, u).detach(), d.zg);
  return {full, p};
}

// Unit u's parameters, gathered (from a prefetch if one was started), trimmed to its numel.
at::Tensor take_gathered(DataParallel& d, size_t u) {
  auto it = d.prefetched.find(u);
  std::pair<at::Tensor, comm::Pending> g = it != d.prefetched.end() ? it->second : start_gather(d, u);
  if (it != d.prefetched.end()) d.prefetched.erase(it);
  g.second.wait();
  return g.first.narrow(0, 0, d.units[u].numel);
}

// Starts gathering unit u (a block's) unless it is started already.
void prefetch(DataParallel& d, size_t u) {
  if (u < d.units.size() && d.units[u].block >= 0 && !d.prefetched.count(u)) d.prefetched[u] = start_gather(d, u);
}
// The same for the block that runs after unit `from`'s in this direction (+1 forward, -1
// backward), if it is in the same pipeline chunk (the next layer): what follows a chunk's end may
// run after the step's update.
void prefetch_next(DataParallel& d, size_t from, int dir) {
  const size_t u = from + static_cast<size_t>(dir);
  if (u < d.units.size() && d.units[u].block == d.units[from].block + dir) prefetch(d, u);
}

// A zeroed buffer for unit u's gradient, padded to ranks * piece for the reduce-scatter.
at::Tensor padded_grad(DataParallel& d, size_t u) { return unit_buffer(d, u).zero_(); }

// This rank's piece of the sum over ranks of `flat` (unit u's gradient, padded).
at::Tensor reduce_scatter_unit(DataParallel& d, size_t u, at::Tensor flat) {
  const Unit& un = d.units[u];
  at::Tensor mine = at::empty({un.piece}, flat.options());
  if (d.zg.size == d.dp.size) {
    comm::reduce_scatter_sum(mine, flat, d.dp);
  } else {  // hybrid: the sum over every site, of which this rank keeps its site's piece
    comm::all_reduce_sum(flat, d.dp);
    mine.copy_(flat.narrow(0, d.zg.rank * un.piece, un.piece));
  }
  return mine;
}

// Adds unit u's piece of the reduced gradient to this rank's gradient.
void add_to_own_grad(DataParallel& d, size_t u, const at::Tensor& piece) {
  torch::NoGradGuard no_grad;
  grad_shard(d).narrow(0, d.units[u].local, d.units[u].piece).add_(piece);
}

// Block unit u's parameters: views of `flat` (its gathered values or its gradient), in order.
std::vector<at::Tensor> block_params(const DataParallel& d, const at::Tensor& flat, size_t u) {
  std::vector<at::Tensor> ps;
  const int64_t base = d.units[u].begin;
  for (size_t i = 0; i < d.layout.names.size(); ++i) {
    const int64_t off = d.layout.offsets[i] - base;
    if (off >= 0 && off < d.units[u].numel) ps.push_back(flat.narrow(0, off, d.layout.numels[i]).view(d.layout.shapes[i]));
  }
  TORCH_CHECK(ps.size() == 12, "zero3: block unit with ", ps.size(), " tensors");
  return ps;
}

model::Block block_views(const DataParallel& d, const at::Tensor& flat, size_t u) {
  return model::block_of(block_params(d, flat, u));
}

// How a block runs: block_forward (tp 1) or a tp block (`run` with its `context`, model/recompute.h).
struct BlockRunSpec {
  model::BlockRun run = nullptr;
  std::vector<int64_t> context;
};

struct ShardedBlock : torch::autograd::Function<ShardedBlock> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& piece, int64_t dp_ptr,
                            int64_t u, bool train, int64_t run, const std::vector<int64_t>& context) {
    DataParallel& d = *reinterpret_cast<DataParallel*>(dp_ptr);
    ctx->saved_data["dp"] = dp_ptr;
    ctx->saved_data["u"] = u;
    ctx->saved_data["train"] = train;
    ctx->saved_data["run"] = run;
    ctx->saved_data["context"] = context;
    model::AutocastState ac = model::autocast_state();
    ctx->saved_data["cpu_autocast"] = ac.cpu;
    ctx->saved_data["gpu_autocast"] = ac.gpu;
    ctx->save_for_backward({x});
    at::Tensor flat = take_gathered(d, static_cast<size_t>(u));
    prefetch_next(d, static_cast<size_t>(u), +1);
    torch::NoGradGuard no_grad;
    return model::forward_block(block_views(d, flat, static_cast<size_t>(u)), x, d.model->cfg, train,
                                reinterpret_cast<model::BlockRun>(run), context);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    DataParallel& d = *state_of(ctx);
    const size_t u = static_cast<size_t>(ctx->saved_data["u"].toInt());
    // The parameters as leaves of their own: a gradient for views of one flat tensor would come
    // back through each view's backward as a zero tensor of the whole block, 12 per block.
    std::vector<at::Tensor> ps = block_params(d, take_gathered(d, u), u);
    for (at::Tensor& p : ps) p = p.detach().requires_grad_(true);
    prefetch_next(d, u, -1);
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    at::Tensor y;
    {
      torch::AutoGradMode grad_on(true);  // off in a backward: the rerun is recorded for grad()
      y = model::rerun_block(model::block_of(ps), x, d.model->cfg, ctx->saved_data["train"].toBool(),
                             {ctx->saved_data["cpu_autocast"].toBool(), ctx->saved_data["gpu_autocast"].toBool()},
                             reinterpret_cast<model::BlockRun>(ctx->saved_data["run"].toInt()),
                             ctx->saved_data["context"].toIntVector());
    }
    std::vector<at::Tensor> inputs{x};
    inputs.insert(inputs.end(), ps.begin(), ps.end());
    variable_list g = torch::autograd::grad({y}, inputs, {grad_out[0]}, /*retain_graph=*/false,
                                            /*create_graph=*/false, /*allow_unused=*/true);
    ps.clear();  // the gathered block is free from here
    at::Tensor flat = padded_grad(d, u);
    std::vector<at::Tensor> slots = block_params(d, flat, u);
    for (size_t i = 0; i < slots.size(); ++i)
      if (g[i + 1].defined()) slots[i].copy_(g[i + 1]);
    g.resize(1);  // the parameters' gradients are free from here, before the reduction
    // Added to own's gradient here: returned for the piece (a narrow of own), autograd would
    // spread it over a zero tensor the size of all of own and add that, for every block.
    add_to_own_grad(d, u, reduce_scatter_unit(d, u, flat));
    return {g[0], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The unit of h[i]: the blocks follow the embeddings where this rank holds them.
size_t block_unit(const DataParallel& d, size_t i) { return (d.emb_unit >= 0 ? 1 : 0) + i; }

// Block h[i] on x: in training through ShardedBlock; in evaluation gathered, run and freed.
at::Tensor sharded_block(DataParallel& d, size_t i, const at::Tensor& x, bool train, const BlockRunSpec& how) {
  const size_t u = block_unit(d, i);
  if (!at::GradMode::is_enabled()) {
    at::Tensor flat = take_gathered(d, u);
    prefetch_next(d, u, +1);
    return model::forward_block(block_views(d, flat, u), x, d.model->cfg, train, how.run, how.context);
  }
  return ShardedBlock::apply(x, own_piece(d, u), reinterpret_cast<int64_t>(&d), static_cast<int64_t>(u), train,
                             reinterpret_cast<int64_t>(how.run), how.context);
}

// Unit u gathered: for the step (kept, a leaf whose gradient the micro-batches add to) or, outside
// one, for this use.
at::Tensor kept_unit(DataParallel& d, size_t u) {
  if (!d.in_step) return take_gathered(d, u);
  at::Tensor& t = d.kept[u];
  if (!t.defined()) t = take_gathered(d, u).detach().requires_grad_(true);
  return t;
}

// Points v's embeddings or final LayerNorm (per their names) at `flat`, unit u's values (gathered)
// or gradient.
void view_unit(const DataParallel& d, size_t u, const at::Tensor& flat, model::GPT2& v) {
  const FlatLayout& l = d.layout;
  for (size_t i = 0; i < l.names.size(); ++i) {
    const int64_t off = l.offsets[i] - d.units[u].begin;
    if (off < 0 || off >= d.units[u].numel) continue;
    const std::string& n = l.names[i];
    (n == "wte.weight" ? v.wte : n == "wpe.weight" ? v.wpe : n == "ln_f.weight" ? v.ln_f_w : v.ln_f_b) =
        flat.narrow(0, off, l.numels[i]).view(l.shapes[i]);
  }
}

}  // namespace

void setup_zero3(DataParallel& d, model::GPT2& m) {
  if (m.cfg.dropout != 0.0)
    throw UserError("parallel: zero 3 recomputes each block in backward and needs model.dropout = 0");
  const FlatLayout& l = d.layout;
  // Units: [wte, wpe], each block "h.i", [ln_f] (those of this rank's pipeline stage):
  // contiguous ranges of the flat vector.
  std::string key;
  for (size_t i = 0; i < l.names.size(); ++i) {
    const std::string& name = l.names[i];
    const bool block = name.rfind("h.", 0) == 0;
    std::string k = block ? name.substr(0, name.find('.', 2)) : name.rfind("ln_f", 0) == 0 ? "ln_f" : "emb";
    if (d.units.empty() || k != key) {
      if (!block) (k == "emb" ? d.emb_unit : d.lnf_unit) = static_cast<int>(d.units.size());
      d.units.push_back({l.offsets[i], 0, 0, 0, block ? std::stoi(k.substr(2)) : -1});
    }
    key = k;
    d.units.back().numel += l.numels[i];
  }
  const int n = d.zg.size;
  int64_t local = 0;
  for (Unit& u : d.units) {
    u.piece = ((u.numel + n - 1) / n + 15) / 16 * 16;
    u.local = local;
    local += u.piece;
  }
  // This rank's pieces of the initial parameters (copied straight from the model's tensors, no
  // full flat copy); the model then keeps none (a last stage keeps its tied head).
  const auto named = model::named_parameters(m);
  d.own = at::zeros({local}, named.front().second.options().requires_grad(false));
  {
    torch::NoGradGuard no_grad;
    for (const Segment& s : zero3_segments(d))
      for (size_t i = 0; i < named.size(); ++i) {
        const int64_t lo = std::max(s.global, l.offsets[i]), hi = std::min(s.global + s.size, l.offsets[i] + l.numels[i]);
        if (lo < hi)
          d.own.narrow(0, s.local + lo - s.global, hi - lo).copy_(named[i].second.reshape({-1}).narrow(0, lo - l.offsets[i], hi - lo));
      }
  }
  d.own.requires_grad_(true);
  const int64_t layers = static_cast<int64_t>(m.h.size());
  model::GPT2Config cfg = m.cfg;
  const std::vector<int64_t> ids = m.layer_ids;
  const at::Tensor head = m.head;
  m = model::GPT2{};
  m.cfg = cfg;
  m.layer_ids = ids;
  m.head = head;
  m.h.resize(static_cast<size_t>(layers));
}

std::vector<Segment> zero3_segments(const DataParallel& d) {
  std::vector<Segment> out;
  for (const Unit& u : d.units) {
    const int64_t start = d.zg.rank * u.piece, size = std::min(u.piece, u.numel - start);
    if (size > 0) out.push_back({u.local, u.begin + start, size});
  }
  return out;
}

model::GPT2 zero3_model(DataParallel& d, const ModelPart& part, int64_t sp_seq_len) {
  model::GPT2 view = *d.model;  // its configuration, layer ids and a last stage's head
  for (const auto& [u, wanted] : {std::pair{d.emb_unit, part.first}, std::pair{d.lnf_unit, part.last}})
    if (wanted && u >= 0) view_unit(d, static_cast<size_t>(u), kept_unit(d, static_cast<size_t>(u)), view);
  BlockRunSpec how;
  if (d.tp.size > 1) {
    const tensor::TpSplit split(d.tp, sp_seq_len);
    how = {tensor::tp_block_run(), tensor::tp_block_context(split)};  // d.tp outlives backward
  }
  view.run_block = [&d, how](size_t i, const at::Tensor& x, bool train) { return sharded_block(d, i, x, train, how); };
  if (part.begin < view.h.size()) prefetch(d, block_unit(d, part.begin));
  return view;
}

void reduce_kept_units(DataParallel& d) {
  torch::NoGradGuard no_grad;
  for (auto& [u, t] : d.kept) {  // in unit order: the same on every rank
    at::Tensor flat = padded_grad(d, u);
    if (t.grad().defined()) flat.narrow(0, 0, t.numel()).copy_(t.grad());
    add_to_own_grad(d, u, reduce_scatter_unit(d, u, flat));
  }
  d.kept.clear();
  d.in_step = false;
}

at::Tensor zero3_tied_embedding(DataParallel& d) {
  const auto u = static_cast<size_t>(d.emb_unit);
  model::GPT2 v;
  view_unit(d, u, kept_unit(d, u).detach(), v);
  return v.wte;
}

void zero3_add_tied_embedding_grad(DataParallel& d, const at::Tensor& g) {
  const auto u = static_cast<size_t>(d.emb_unit);
  const at::Tensor& leaf = d.kept.at(u);
  if (!leaf.grad().defined()) leaf.mutable_grad() = at::zeros_like(leaf);
  model::GPT2 v;
  view_unit(d, u, leaf.grad(), v);
  v.wte.add_(g);
}

}  // namespace slm::parallel
