// parallel/zero3.cpp: ZeRO stage 3 (see data_parallel.h): parameters sharded by unit, gathered
// per block around its forward and its recomputed backward, gradients reduce-scattered.
// The collectives sit in two autograd Functions:
//   GatherUnit:   forward all-gather of a unit's pieces,  backward reduce-scatter of its gradient
//                 (embeddings and final LayerNorm: kept from forward to backward);
//   ShardedBlock: forward gather + block + free;  backward gather + recompute + reduce-scatter.
// With tensor parallelism the units are this tp rank's slices (the layout is the tp-split model's),
// sharded over its dp group; the blocks run as tp blocks (their collectives rerun in backward), and
// the embedding and head are the vocabulary-parallel ones (parallel/tensor/model.h).
#include <torch/torch.h>

#include <fmt/format.h>

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

// Starts gathering unit u into a fresh (ranks * piece) buffer.
std::pair<at::Tensor, comm::Pending> start_gather(DataParallel& d, size_t u) {
  at::Tensor full = at::empty({d.units[u].piece * d.zg.size}, d.own.options().requires_grad(false));
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

void prefetch(DataParallel& d, size_t u) {
  if (u < d.units.size() && d.units[u].block >= 0 && !d.prefetched.count(u)) d.prefetched[u] = start_gather(d, u);
}

// This rank's piece of the sum over ranks of grad (numel of unit u).
at::Tensor reduce_scatter_unit(DataParallel& d, size_t u, const at::Tensor& grad) {
  const Unit& un = d.units[u];
  at::Tensor flat = at::zeros({un.piece * d.zg.size}, grad.options());
  flat.narrow(0, 0, un.numel).copy_(grad.reshape({-1}));
  at::Tensor mine = at::empty({un.piece}, grad.options());
  if (d.zg.size == d.dp.size) {
    comm::reduce_scatter_sum(mine, flat, d.dp);
  } else {  // hybrid: the sum over every site, of which this rank keeps its site's piece
    comm::all_reduce_sum(flat, d.dp);
    mine.copy_(flat.narrow(0, d.zg.rank * un.piece, un.piece));
  }
  return mine;
}

model::Block block_views(DataParallel& d, const at::Tensor& flat, size_t u) {
  std::vector<at::Tensor> ps;
  const int64_t base = d.units[u].begin;
  for (size_t i = 0; i < d.layout.names.size(); ++i) {
    const int64_t off = d.layout.offsets[i] - base;
    if (off >= 0 && off < d.units[u].numel) ps.push_back(flat.narrow(0, off, d.layout.numels[i]).view(d.layout.shapes[i]));
  }
  TORCH_CHECK(ps.size() == 12, "zero3: block unit with ", ps.size(), " tensors");
  return model::block_of(ps);
}

struct GatherUnit : torch::autograd::Function<GatherUnit> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& piece, int64_t dp_ptr, int64_t u) {
    ctx->saved_data["dp"] = dp_ptr;
    ctx->saved_data["u"] = u;
    return take_gathered(*reinterpret_cast<DataParallel*>(dp_ptr), static_cast<size_t>(u));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    DataParallel& d = *state_of(ctx);
    return {reduce_scatter_unit(d, static_cast<size_t>(ctx->saved_data["u"].toInt()), grad[0]), at::Tensor(),
            at::Tensor()};
  }
};

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
    prefetch(d, static_cast<size_t>(u) + 1);
    torch::NoGradGuard no_grad;
    return model::forward_block(block_views(d, flat, static_cast<size_t>(u)), x, d.model->cfg, train,
                                reinterpret_cast<model::BlockRun>(run), context);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    DataParallel& d = *state_of(ctx);
    const size_t u = static_cast<size_t>(ctx->saved_data["u"].toInt());
    at::Tensor flat = take_gathered(d, u).detach().requires_grad_(true);
    prefetch(d, u - 1);
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    at::Tensor y;
    {
      torch::AutoGradMode grad_on(true);  // the parameter views of `flat` must be recorded too
      y = model::rerun_block(block_views(d, flat, u), x, d.model->cfg, ctx->saved_data["train"].toBool(),
                             {ctx->saved_data["cpu_autocast"].toBool(), ctx->saved_data["gpu_autocast"].toBool()},
                             reinterpret_cast<model::BlockRun>(ctx->saved_data["run"].toInt()),
                             ctx->saved_data["context"].toIntVector());
    }
    variable_list g = torch::autograd::grad({y}, {x, flat}, {grad_out[0]});
    return {g[0], reduce_scatter_unit(d, u, g[1]), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Block i on x: in training through ShardedBlock; in evaluation gathered, run and freed.
at::Tensor sharded_block(DataParallel& d, size_t i, const at::Tensor& x, bool train, const BlockRunSpec& how) {
  const size_t u = i + 1;
  if (!at::GradMode::is_enabled()) {
    at::Tensor flat = take_gathered(d, u);
    prefetch(d, u + 1);
    return model::forward_block(block_views(d, flat, u), x, d.model->cfg, train, how.run, how.context);
  }
  return ShardedBlock::apply(x, own_piece(d, u), reinterpret_cast<int64_t>(&d), static_cast<int64_t>(u), train,
                             reinterpret_cast<int64_t>(how.run), how.context);
}

}  // namespace

void setup_zero3(DataParallel& d, model::GPT2& m) {
  if (m.cfg.dropout != 0.0)
    throw UserError("parallel: zero 3 recomputes each block in backward and needs model.dropout = 0");
  const FlatLayout& l = d.layout;
  // Units: [wte, wpe], each block "h.i", [ln_f]: contiguous ranges of the flat vector.
  std::string key;
  for (size_t i = 0; i < l.names.size(); ++i) {
    const std::string& name = l.names[i];
    const bool block = name.rfind("h.", 0) == 0;
    std::string k = block ? name.substr(0, name.find('.', 2)) : name.rfind("ln_f", 0) == 0 ? "ln_f" : "emb";
    if (d.units.empty() || k != key) d.units.push_back({l.offsets[i], 0, 0, 0, block ? std::stoi(k.substr(2)) : -1});
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
  // full flat copy); the model then keeps none.
  d.own = at::zeros({local}, m.wte.options().requires_grad(false));
  {
    torch::NoGradGuard no_grad;
    const auto named = model::named_parameters(m);
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
  m = model::GPT2{};
  m.cfg = cfg;
  m.layer_ids = ids;
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

at::Tensor zero3_forward_loss(DataParallel& d, const at::Tensor& idx, const at::Tensor& targets, bool train) {
  const auto ptr = reinterpret_cast<int64_t>(&d);
  model::GPT2 view;
  view.cfg = d.model->cfg;
  view.layer_ids = d.model->layer_ids;
  view.h.resize(d.model->h.size());
  // Embeddings (unit 0) and final LayerNorm (last unit) stay gathered through backward.
  const size_t last = d.units.size() - 1;
  at::Tensor emb = GatherUnit::apply(own_piece(d, 0), ptr, 0);
  at::Tensor lnf = GatherUnit::apply(own_piece(d, last), ptr, static_cast<int64_t>(last));
  const FlatLayout& l = d.layout;
  auto view_of = [&](const at::Tensor& flat, int64_t base, size_t i) {
    return flat.narrow(0, l.offsets[i] - base, l.numels[i]).view(l.shapes[i]);
  };
  view.wte = view_of(emb, d.units[0].begin, 0);
  view.wpe = view_of(emb, d.units[0].begin, 1);
  view.ln_f_w = view_of(lnf, d.units[last].begin, l.names.size() - 2);
  view.ln_f_b = view_of(lnf, d.units[last].begin, l.names.size() - 1);
  if (d.tp.size == 1) {
    view.run_block = [&d](size_t i, const at::Tensor& x, bool tr) { return sharded_block(d, i, x, tr, {}); };
    prefetch(d, 1);
    return model::forward_loss(view, idx, targets, train);
  }
  const tensor::TpSplit split(d.tp, sequence_parallel(d) ? idx.size(1) : 0, train);
  const BlockRunSpec how{tensor::tp_block_run(), tensor::tp_block_context(split)};  // d.tp outlives backward
  at::Tensor x = tensor::embed(view, idx, split);
  prefetch(d, 1);
  for (size_t i = 0; i < view.h.size(); ++i) x = sharded_block(d, i, x, train, how);
  return tensor::head_loss(view, x, targets, split);
}

}  // namespace slm::parallel
