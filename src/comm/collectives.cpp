// comm/collectives.cpp: see collectives.h.
#include "comm/collectives.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <torch/torch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/backend.h"
#include "comm/health.h"
#include "comm/wan.h"
#include "util/hash.h"
#include "util/toml_keys.h"

namespace slm::comm {

struct Pending::State {
  c10::intrusive_ptr<c10d::Work> work;
  std::function<void()> done;  // completion step (copy back, keep own part), after the wait
  Group group;
  const char* op = "";
  bool waited = false;
  ~State() {
    if (!waited && work) try {
        work->wait();
      } catch (...) {
      }
  }
};

namespace {

[[noreturn]] void fail(const Group& g, const char* op, const std::exception& e) {
  std::string what = e.what();
  what = what.substr(0, what.find('\n'));
  std::string who = g.backend && g.backend->health ? g.backend->health->lost_ranks() : "a peer";
  throw PeerLost(fmt::format("{} in group {} ({} ranks) failed; lost {}: {}", op, g.name, g.size, who, what));
}

// What a tensor travels as. Gloo before 2.15 has no bf16/fp16: such tensors travel as fp32
// copies. Gloo's send/recv take CPU tensors only (its collectives stage CUDA tensors themselves):
// a CUDA tensor goes point to point through a CPU copy. Copies are written back on completion.
at::Tensor wire_of(const at::Tensor& t, const Group& g, bool point_to_point) {
  const bool gloo = g.backend->kind == "gloo";
  const bool half = t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf;
  const at::ScalarType dtype = gloo && half && !compat::kGlooHasHalfTypes ? at::kFloat : t.scalar_type();
  const at::Device device = gloo && point_to_point && t.is_cuda() ? at::Device(at::kCPU) : t.device();
  return dtype == t.scalar_type() && device == t.device() ? t : at::empty(t.sizes(), t.options().dtype(dtype).device(device));
}

Pending start(const Group& g, const char* op, c10::intrusive_ptr<c10d::Work> w, std::function<void()> done) {
  Pending p;
  p.state = std::make_shared<Pending::State>();
  p.state->work = std::move(w);
  p.state->done = std::move(done);
  p.state->group = g;
  p.state->op = op;
  return p;
}

Pending completed(std::function<void()> done = nullptr) {
  if (done) done();
  return Pending{};
}

// Where small tensors for a group must live: NCCL only moves CUDA tensors.
at::Device scalar_device(const Group& g) { return g.backend->kind == "nccl" ? at::kCUDA : at::kCPU; }

// Starts call(tensors) on t -- as an fp32 copy where Gloo lacks t's dtype, copied back on
// completion -- turning a failure to start into PeerLost.
// Bytes this rank sends for a ring all-reduce (2(n-1)/n of the tensor), all-gather ((n-1)/n of
// the result) or reduce-scatter ((n-1)/n of the input), or a broadcast / send (the tensor).
void count_bytes(const Group& g, const char* op, int64_t bytes) {
  const double n = g.size;
  const std::string o = op;
  const double k = o.rfind("all-reduce", 0) == 0                     ? 2 * (n - 1) / n
                   : o == "all-gather" || o == "reduce-scatter" ? (n - 1) / n
                                                                : 1.0;
  g.backend->bytes_sent += static_cast<int64_t>(k * static_cast<double>(bytes));
}

template <typename F>
Pending launch_on(const Group& g, const char* op, const at::Tensor& t, F call, bool point_to_point = false) {
  at::Tensor wire = wire_of(t, g, point_to_point);
  if (!wire.is_same(t)) wire.copy_(t);
  count_bytes(g, op, wire.numel() * static_cast<int64_t>(wire.element_size()));
  std::vector<at::Tensor> ts{wire};
  std::function<void()> done;
  if (!wire.is_same(t)) done = [t, wire]() mutable { t.copy_(wire); };
  try {
    return start(g, op, call(ts), done);
  } catch (const std::exception& e) {
    fail(g, op, e);
  }
}

}  // namespace

bool matched_by_tag(const Group& g) {
  static const bool in_order = std::getenv("SLM_P2P_IN_ORDER") != nullptr;  // tests: NCCL's order on Gloo
  return (!g.backend || g.backend->kind == "gloo") && !in_order;
}

int64_t bytes_sent(const Group& g) {
  int64_t n = g.backend ? g.backend->bytes_sent.load() : 0;
  if (g.wan) {  // the groups a WAN-aware all-reduce uses count as this group's traffic
    n += bytes_sent(g.wan->local) + bytes_sent(g.wan->cross);
    for (const Group& c : g.wan->channels) n += bytes_sent(c);
  }
  return n;
}

void count_sent(const Group& g, int64_t n) {
  if (g.backend) g.backend->bytes_sent += n;
}

void abandon(const std::vector<Group>& groups, const std::string& what, double timeout_s) {
  std::vector<std::string> names;
  std::string who = "a peer";
  for (const Group& g : groups) {
    if (g.backend) compat::abort_backend(*g.backend->pg);
    names.push_back(fmt::format("{} ({} ranks)", g.name, g.size));
    if (who == "a peer" && g.backend && g.backend->health) who = g.backend->health->lost_ranks();  // the job's
  }
  throw PeerLost(fmt::format("{} in group{} {} did not finish within {:.0f} s (dist.timeout_s); lost {}", what,
                             names.size() == 1 ? "" : "s", fmt::join(names, " and "), timeout_s, who));
}

Pending send_async(const at::Tensor& t, int dst, int tag, const Group& g) {
  TORCH_CHECK(t.is_contiguous(), "send_async: tensor must be contiguous");
  return launch_on(g, "send", t, [&](std::vector<at::Tensor>& ts) { return g.backend->pg->send(ts, dst, tag); }, true);
}

Pending recv_async(const at::Tensor& t, int src, int tag, const Group& g) {
  TORCH_CHECK(t.is_contiguous(), "recv_async: tensor must be contiguous");
  at::Tensor wire = wire_of(t, g, true);
  std::vector<at::Tensor> ts{wire};
  std::function<void()> done;
  if (!wire.is_same(t)) done = [t, wire]() mutable { t.copy_(wire); };
  try {
    return start(g, "receive", g.backend->pg->recv(ts, src, tag), done);
  } catch (const std::exception& e) {
    fail(g, "receive", e);
  }
}

void Pending::wait() {
  if (!state || state->waited) return;
  state->waited = true;
  try {
    state->work->wait();
  } catch (const std::exception& e) {
    fail(state->group, state->op, e);
  }
  // Released once run: what it holds (tensors, other pending operations) is not kept alive by
  // copies of this Pending.
  if (auto done = std::exchange(state->done, nullptr)) done();
}

Pending then(Pending p, std::function<void()> f) {
  if (!p.state || p.state->waited) {
    f();
    return p;
  }
  auto inner = std::move(p.state->done);
  p.state->done = [inner, f] {
    if (inner) inner();
    f();
  };
  return p;
}

Pending all_reduce_sum_async(const at::Tensor& t, const Group& g) {
  if (g.size == 1) return completed();
  if (g.wan) return wan_all_reduce(t, g);
  return launch_on(g, "all-reduce", t, [&](std::vector<at::Tensor>& ts) {
    return g.backend->pg->allreduce(ts, c10d::AllreduceOptions{});
  });
}

void all_reduce_sum(at::Tensor& t, const Group& g) { all_reduce_sum_async(t, g).wait(); }

Pending reduce_scatter_sum_async(const at::Tensor& shard_out, const at::Tensor& flat, const Group& g) {
  const int64_t n = shard_out.numel();
  TORCH_CHECK(flat.numel() == n * g.size, "reduce_scatter_sum: flat has ", flat.numel(),
              " elements, want ", n, " x ", g.size);
  auto keep_own = [shard_out, flat, n, r = g.rank]() mutable {
    shard_out.view({-1}).copy_(flat.reshape({-1}).narrow(0, r * n, n));
  };
  if (g.size == 1) return completed(keep_own);
  if (g.backend->kind == "nccl" && !g.wan) {  // a real reduce-scatter: (n-1)/n of the tensor on the wire
    at::Tensor in = flat.reshape({-1}), out = shard_out.view({-1});
    count_bytes(g, "reduce-scatter", in.numel() * static_cast<int64_t>(in.element_size()));
    try {
      return start(g, "reduce-scatter", g.backend->pg->_reduce_scatter_base(out, in, c10d::ReduceScatterOptions{}),
                   [in] {});
    } catch (const std::exception& e) {
      fail(g, "reduce-scatter", e);
    }
  }
  // Gloo: an all-reduce of which each rank keeps its part. Gloo 1.13 has no reduce-scatter, and
  // 2.15's moves as many bytes as an all-reduce (measured), so one code path serves both.
  return then(all_reduce_sum_async(flat, g), keep_own);
}

void reduce_scatter_sum(at::Tensor& shard_out, at::Tensor& flat, const Group& g) {
  reduce_scatter_sum_async(shard_out, flat, g).wait();
}

Pending all_gather_into_async(const at::Tensor& flat_out, const at::Tensor& shard, const Group& g) {
  const int64_t n = shard.numel();
  TORCH_CHECK(flat_out.numel() == n * g.size, "all_gather_into: flat_out has ", flat_out.numel(),
              " elements, want ", n, " x ", g.size);
  if (g.size == 1) return completed([flat_out, shard]() mutable { flat_out.view(shard.sizes()).copy_(shard); });
  at::Tensor in = wire_of(shard, g, false);
  const bool wire_copy = !in.is_same(shard);
  in = (wire_copy ? in.copy_(shard) : shard.clone()).reshape({-1});
  at::Tensor out = wire_copy ? at::empty({n * g.size}, in.options()) : flat_out.reshape({-1});
  std::vector<std::vector<at::Tensor>> outs(1);
  for (int r = 0; r < g.size; ++r) outs[0].push_back(out.narrow(0, r * n, n));
  std::vector<at::Tensor> ins{in};
  count_bytes(g, "all-gather", out.numel() * static_cast<int64_t>(out.element_size()));
  try {
    auto w = g.backend->pg->allgather(outs, ins, c10d::AllgatherOptions{});
    std::function<void()> done = [in] {};  // keeps the input alive until the wait
    if (wire_copy) done = [flat_out, out, in]() mutable { flat_out.reshape({-1}).copy_(out); };
    return start(g, "all-gather", w, done);
  } catch (const std::exception& e) {
    fail(g, "all-gather", e);
  }
}

void all_gather_into(at::Tensor& flat_out, const at::Tensor& shard, const Group& g) {
  all_gather_into_async(flat_out, shard, g).wait();
}

void broadcast(at::Tensor& t, int root, const Group& g) {
  if (g.size == 1) return;
  c10d::BroadcastOptions o;
  o.rootRank = root;
  launch_on(g, "broadcast", t, [&](std::vector<at::Tensor>& ts) { return g.backend->pg->broadcast(ts, o); }).wait();
}

void barrier(const Group& g) {
  if (g.size == 1) return;
  // An all-reduce of one number: Gloo's barrier does not honour the timeout on every version.
  at::Tensor one = at::ones({1}, at::TensorOptions().device(scalar_device(g)));
  all_reduce_sum(one, g);
}

std::vector<double> sum(std::vector<double> v, const Group& g) {
  if (g.size == 1 || v.empty()) return v;
  at::Tensor t = at::tensor(v, at::kDouble).to(scalar_device(g));
  all_reduce_sum(t, g);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

double sum(double v, const Group& g) { return sum(std::vector<double>{v}, g)[0]; }

std::vector<double> gather(const std::vector<double>& mine, const Group& g) {
  std::vector<double> all(mine.size() * static_cast<size_t>(g.size), 0.0);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(mine.size() * static_cast<size_t>(g.rank)));
  return sum(all, g);
}

PendingSum sum_async(const std::vector<double>& v, const Group& g) {
  PendingSum p;
  p.t = at::tensor(v, at::kDouble);
  if (g.size > 1 && !v.empty()) {
    p.t = p.t.to(scalar_device(g));
    p.op = all_reduce_sum_async(p.t, g);
  }
  return p;
}

std::vector<double> PendingSum::get() {
  op.wait();
  const at::Tensor c = t.cpu();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void all_reduce_max(at::Tensor& t, const Group& g) {
  if (g.size == 1) return;
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  launch_on(g, "all-reduce(max)", t, [&](std::vector<at::Tensor>& ts) { return g.backend->pg->allreduce(ts, o); })
      .wait();
}

double max(double v, const Group& g) {
  if (g.size == 1) return v;
  at::Tensor t = at::tensor({v}, at::kDouble).to(scalar_device(g));
  all_reduce_max(t, g);
  return t.cpu().item<double>();
}

}  // namespace slm::comm

namespace slm::comm {

namespace {

// Rank 0's `text`, on every rank of g.
std::string text_of_first_rank(const std::string& text, const Group& g) {
  at::Tensor n = at::tensor({static_cast<int64_t>(text.size())}, at::kLong).to(scalar_device(g));
  broadcast(n, 0, g);
  const int64_t len = n.cpu().item<int64_t>();
  if (len == 0) return "";
  at::Tensor bytes = g.rank == 0 ? at::tensor(std::vector<uint8_t>(text.begin(), text.end()), at::kByte)
                                 : at::empty({len}, at::kByte);
  bytes = bytes.to(scalar_device(g));
  broadcast(bytes, 0, g);
  bytes = bytes.cpu();
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(len));
}

}  // namespace

void require_same(const std::string& text, const Group& g, const std::string& what) {
  if (g.size == 1) return;
  const std::string h = hash_hex(text);
  at::Tensor mine = at::tensor({static_cast<int64_t>(std::stoull(h.substr(0, 15), nullptr, 16)),
                                static_cast<int64_t>(std::stoull(h.substr(15, 15), nullptr, 16))},
                               at::kLong)
                        .to(scalar_device(g));
  at::Tensor all = at::empty({2 * g.size}, mine.options());
  all_gather_into(all, mine, g);
  all = all.cpu();
  std::vector<int> differ;
  for (int r = 1; r < g.size; ++r)
    if (!all.narrow(0, 2 * r, 2).equal(all.narrow(0, 0, 2))) differ.push_back(g.ranks[static_cast<size_t>(r)]);
  if (differ.empty()) return;
  // A rank that differs names the first setting where (rank 0's text comes to every rank).
  const std::string first = text_of_first_rank(text, g);
  const std::string where = g.rank == 0 ? "" : first_difference(text, first, g.ranks[0]);
  throw UserError(fmt::format("{} {}'s {} differs from rank {}'s{}; every rank must run the same command",
                              differ.size() == 1 ? "rank" : "ranks", fmt::join(differ, ", "), what, g.ranks[0],
                              where.empty() ? "" : " (" + where + ")"));
}

}  // namespace slm::comm
