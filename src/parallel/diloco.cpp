// parallel/diloco.cpp: see diloco.h.
#include "parallel/diloco.h"

#include <torch/torch.h>

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "comm/codec.h"
#include "comm/collectives.h"
#include "util/error.h"
#include "util/hash.h"

namespace slm::parallel {

namespace {

struct Fragment {
  int64_t begin = 0, size = 0;  // range of the whole model's flat vector
  int64_t piece = 0;            // what each site rank sends: ceil(size / L) (the last shares may be
                                // short), or with sharded parameters this rank's len
  int64_t local = 0, len = 0;   // this rank's share: params[local, local + len)
  int64_t own = 0;              // its offset in theta / momentum / error
};

struct Flight {  // one fragment's sync, from its start to its merge
  int64_t fragment = 0, merge_step = 0;
  at::Tensor sent, received;  // kept alive while the transfer runs
  comm::Pending op;
  bool applied = false;       // θ_outer updated
};

}  // namespace

struct OuterSync {
  SyncConfig cfg;
  comm::Group site, cross;
  at::Tensor params;                 // this rank's flat parameters, or its ZeRO 3 shard
  bool sharded = false;              // params is a shard: no all-gather inside the site after a merge
  std::vector<Fragment> frags;
  at::Tensor theta, momentum, error;  // this rank's pieces of every fragment, in fragment order
  std::vector<Flight> flights;
  std::vector<int64_t> exact_at;  // per fragment: the step its parameters last became θ_outer exactly
  double weight = 1;              // this site's Δ is sent times this (sync.by = "time": its share of the tokens)
};

void set_delta_weight(OuterSync& o, double w) { o.weight = w; }

void outer_nesterov(at::Tensor theta, at::Tensor momentum, const at::Tensor& delta, double lr, double mu) {
  torch::NoGradGuard no_grad;
  momentum.mul_(mu).add_(delta);
  theta.sub_(delta + momentum * mu, lr);
}

bool sync_due(int64_t step, int64_t fragment, int64_t fragments, int64_t inner_steps) {
  const int64_t since = step - fragment * inner_steps / fragments;
  return since > 0 && since % inner_steps == 0;
}

// The fragment of a parameter: its layer's group, 0 for the embeddings, the last for ln_f.
static int64_t fragment_of(const std::string& name, int64_t n_layer, int64_t fragments) {
  if (name.rfind("h.", 0) == 0) return std::stoll(name.substr(2)) / (n_layer / fragments);
  return name.rfind("ln_f.", 0) == 0 ? fragments - 1 : 0;
}

std::vector<std::pair<int64_t, int64_t>> fragment_ranges(const FlatLayout& l, int64_t n_layer, int64_t fragments) {
  if (fragments < 1 || n_layer % fragments != 0)
    throw UserError(fmt::format("sync: fragments {} must divide model.n_layer {}", fragments, n_layer));
  std::vector<std::pair<int64_t, int64_t>> out(static_cast<size_t>(fragments), {-1, -1});
  int64_t last = 0;
  for (size_t i = 0; i < l.names.size(); ++i) {
    const int64_t f = fragment_of(l.names[i], n_layer, fragments);
    if (f < last) throw std::logic_error("fragments are not contiguous in the flat layout");
    last = f;
    auto& r = out[static_cast<size_t>(f)];
    if (r.first < 0) r.first = l.offsets[i];
    r.second = l.offsets[i] + l.numels[i];
  }
  int64_t at = 0;  // empty fragments sit where they would start
  for (auto& r : out) {
    if (r.first < 0) r = {at, at};
    at = r.second;
  }
  return out;
}

// θ_outer (the current parameters), momentum and error of `own` values.
static void init_outer_buffers(OuterSync& o, int64_t own) {
  o.exact_at.assign(o.frags.size(), -1);
  o.theta = at::empty({own}, o.params.options());
  o.momentum = at::zeros_like(o.theta);
  o.error = at::zeros_like(o.theta);
  reset_outer(o);
}

std::shared_ptr<OuterSync> make_outer_sync(const SyncConfig& c, const at::Tensor& params, const FlatLayout& layout,
                                           int64_t n_layer, const comm::Group& site, const comm::Group& cross) {
  auto o = std::make_shared<OuterSync>();
  o->cfg = c, o->site = site, o->cross = cross, o->params = params;
  const int64_t L = site.size;
  int64_t own = 0;
  for (const auto& [begin, end] : fragment_ranges(layout, n_layer, c.fragments)) {
    Fragment f;
    f.begin = begin, f.size = end - begin;
    f.piece = (f.size + L - 1) / L;
    const int64_t lo = std::min(f.size, site.rank * f.piece);
    f.local = begin + lo, f.len = std::min(f.piece, f.size - lo);
    f.own = own;
    own += f.len;
    o->frags.push_back(f);
  }
  init_outer_buffers(*o, own);
  return o;
}

std::shared_ptr<OuterSync> make_sharded_outer_sync(const SyncConfig& c, const at::Tensor& shard,
                                                   const std::vector<Segment>& segments, const FlatLayout& layout,
                                                   int64_t n_layer, const comm::Group& site, const comm::Group& cross) {
  auto o = std::make_shared<OuterSync>();
  o->cfg = c, o->site = site, o->cross = cross, o->params = shard, o->sharded = true;
  int64_t own = 0;
  for (const auto& [begin, end] : fragment_ranges(layout, n_layer, c.fragments)) {
    Fragment f;
    f.begin = begin, f.size = end - begin;
    int64_t lo = -1, hi = -1;  // the shard's pieces of this fragment, with the padding between them
    for (const Segment& s : segments) {
      if (s.global < begin || s.global >= end) continue;
      if (s.global + s.size > end) throw std::logic_error("a shard segment crosses a fragment boundary");
      lo = lo < 0 ? s.local : std::min(lo, s.local);
      hi = std::max(hi, s.local + s.size);
    }
    f.local = std::max<int64_t>(lo, 0), f.len = lo < 0 ? 0 : hi - lo, f.piece = f.len;
    f.own = own;
    own += f.len;
    o->frags.push_back(f);
  }
  init_outer_buffers(*o, own);
  return o;
}

void reset_outer(OuterSync& o) {
  torch::NoGradGuard no_grad;
  for (const Fragment& f : o.frags) o.theta.narrow(0, f.own, f.len).copy_(o.params.narrow(0, f.local, f.len));
  o.momentum.zero_();
  o.error.zero_();
  o.flights.clear();
}

void check_same_outer(const OuterSync& o) {
  const at::Tensor t = o.theta.detach().cpu().contiguous();
  const std::string h = hash_hex({static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes())});
  try {
    comm::require_same(h, o.cross, "outer parameters");
  } catch (const comm::PeerLost&) {
    throw;
  } catch (const UserError& e) {
    throw UserError(fmt::format("sync: the sites do not start from the same model: {}", e.what()));
  }
}

// Starts fragment f's sync: this rank's piece of Δ = θ_outer − θ (padded to the fragment's piece
// size, the same on every site), compressed with error feedback, all-reduced (fp32) or
// all-gathered (encoded bytes) across the sites in the background.
static void launch(OuterSync& o, int64_t fi, int64_t step) {
  const Fragment& f = o.frags[static_cast<size_t>(fi)];
  Flight x;
  x.fragment = fi, x.merge_step = step + o.cfg.delay;
  if (f.piece == 0) {  // a stage (or shard) without this fragment's layers: nothing to send (every site alike)
    x.applied = true;
    o.flights.push_back(std::move(x));
    return;
  }
  at::Tensor delta = at::zeros({f.piece}, o.theta.options());
  delta.narrow(0, 0, f.len).copy_(o.theta.narrow(0, f.own, f.len)).sub_(o.params.narrow(0, f.local, f.len));
  if (o.weight != 1) delta.mul_(o.weight);
  if (o.cfg.compress == "none") {
    x.sent = x.received = delta;
    x.op = comm::all_reduce_sum_async(delta, o.cross);
  } else {
    at::Tensor err = o.error.narrow(0, f.own, f.len);
    delta.narrow(0, 0, f.len).add_(err);
    x.sent = comm::encode(delta, o.cfg.compress, o.cfg.int8_chunk);
    err.copy_(delta.narrow(0, 0, f.len) - comm::decode(x.sent, o.cfg.compress, f.piece, o.cfg.int8_chunk).narrow(0, 0, f.len));
    x.received = at::empty({x.sent.numel() * o.cross.size}, x.sent.options());
    x.op = comm::all_gather_into_async(x.received, x.sent, o.cross);
  }
  o.flights.push_back(std::move(x));
}

// Waits for x's transfer and applies the sites' mean Δ to θ_outer (summed in site order: the same
// result on every site).
static void apply(OuterSync& o, Flight& x) {
  if (x.applied) return;
  x.op.wait();
  const Fragment& f = o.frags[static_cast<size_t>(x.fragment)];
  const int S = o.cross.size;
  at::Tensor mean;
  if (o.cfg.compress == "none") {
    mean = x.received.narrow(0, 0, f.len) / S;
  } else {
    const int64_t n = x.sent.numel();
    mean = at::zeros({f.piece}, o.theta.options());
    for (int s = 0; s < S; ++s) mean.add_(comm::decode(x.received.narrow(0, s * n, n), o.cfg.compress, f.piece, o.cfg.int8_chunk));
    mean = mean.narrow(0, 0, f.len) / S;
  }
  outer_nesterov(o.theta.narrow(0, f.own, f.len), o.momentum.narrow(0, f.own, f.len), mean, o.cfg.outer_lr,
                 o.cfg.outer_momentum);
  x.applied = true;
  x.sent = x.received = at::Tensor();
}

// The fragment's parameters from θ_outer (mixed with the local ones when the sync travelled for
// `delay` steps, unless `exact`), then every site rank's piece all-gathered inside the site.
static void merge(OuterSync& o, Flight& x, int64_t step, bool exact = false) {
  torch::NoGradGuard no_grad;
  apply(o, x);
  const Fragment& f = o.frags[static_cast<size_t>(x.fragment)];
  at::Tensor mine = o.params.narrow(0, f.local, f.len);
  const at::Tensor outer = o.theta.narrow(0, f.own, f.len);
  if (o.cfg.delay > 0 && !exact) {
    mine.mul_(o.cfg.mix).add_(outer, 1 - o.cfg.mix);
  } else {
    mine.copy_(outer);
    o.exact_at[static_cast<size_t>(x.fragment)] = step;
  }
  if (o.sharded || o.site.size == 1 || f.size == 0) return;
  at::Tensor piece = at::zeros({f.piece}, o.params.options());
  piece.narrow(0, 0, f.len).copy_(mine);
  at::Tensor all = at::empty({f.piece * o.site.size}, o.params.options());
  comm::all_gather_into(all, piece, o.site);
  o.params.narrow(0, f.begin, f.size).copy_(all.narrow(0, 0, f.size));
}

int after_inner_step(OuterSync& o, int64_t step) {
  torch::NoGradGuard no_grad;
  for (int64_t f = 0; f < o.cfg.fragments; ++f)
    if (sync_due(step, f, o.cfg.fragments, o.cfg.inner_steps)) launch(o, f, step);
  int merged = 0;
  for (auto it = o.flights.begin(); it != o.flights.end();) {
    if (it->merge_step > step) {
      ++it;
      continue;
    }
    merge(o, *it, step);
    it = o.flights.erase(it);
    ++merged;
  }
  return merged;
}

int finish_outer(OuterSync& o, int64_t step) {
  torch::NoGradGuard no_grad;
  int merged = 0;
  for (Flight& x : o.flights) merge(o, x, step), ++merged;  // those in flight arrive now
  o.flights.clear();
  for (int64_t f = 0; f < o.cfg.fragments; ++f) {
    if (o.exact_at[static_cast<size_t>(f)] == step) continue;  // already θ_outer: Δ = 0
    launch(o, f, step);
    merge(o, o.flights.back(), step, /*exact=*/true);
    o.flights.clear();
    ++merged;
  }
  const at::Tensor p = o.params.detach().cpu().contiguous();  // every site must now hold one model
  comm::require_same(hash_hex({static_cast<const char*>(p.data_ptr()), static_cast<size_t>(p.nbytes())}), o.cross,
                     "parameters after the final outer sync");
  return merged;
}

int site_index(const OuterSync& o) { return o.cross.rank; }
int num_sites(const OuterSync& o) { return o.cross.size; }

std::string describe(const OuterSync& o) {
  const SyncConfig& c = o.cfg;
  std::string s = fmt::format("DiLoCo across {} site(s) of {} data-parallel rank(s): outer sync every {} steps, outer SGD "
                              "lr {} Nesterov momentum {}",
                              o.cross.size, o.site.size, c.inner_steps, c.outer_lr, c.outer_momentum);
  if (c.fragments > 1) s += fmt::format(", {} fragments (streaming)", c.fragments);
  if (c.delay > 0) s += fmt::format(", merged {} steps later (mix {})", c.delay, c.mix);
  s += c.compress == "none" ? ", fp32 pseudo-gradients"
                            : fmt::format(", {} pseudo-gradients with error feedback", c.compress);
  if (c.by == "time")
    s += fmt::format("; by time: faster sites take more inner steps per sync ({}, at most {}x), weighted by tokens",
                     c.site_speeds.empty() ? "from measured step times" : "relative speeds " + c.site_speeds,
                     c.max_speedup);
  return s;
}

OuterState settle_outer_state(OuterSync& o) {
  OuterState s{o.theta, o.momentum, o.error, {}};
  for (Flight& x : o.flights) {
    apply(o, x);
    s.pending.push_back({x.fragment, x.merge_step});
  }
  return s;
}

void restore_outer_state(OuterSync& o, const OuterState& s) {
  for (const at::Tensor& t : {s.theta, s.momentum, s.error})
    if (t.numel() != o.theta.numel())
      throw UserError(fmt::format("sync: the checkpoint's outer state has {} values, this rank holds {} (resume a "
                                  "DiLoCo run with the same ranks per site and plan inside the sites; the number of sites may change)",
                                  t.numel(), o.theta.numel()));
  torch::NoGradGuard no_grad;
  o.theta.copy_(s.theta), o.momentum.copy_(s.momentum), o.error.copy_(s.error);
  o.flights.clear();
  for (const auto& [f, step] : s.pending) {
    if (f < 0 || f >= o.cfg.fragments) throw UserError("sync: the checkpoint's pending outer syncs do not fit");
    Flight x;
    x.fragment = f, x.merge_step = step, x.applied = true;
    o.flights.push_back(std::move(x));
  }
}

}  // namespace slm::parallel
