// tests/tools/dist_check.cpp: test helper run under `slm launch -n N`: checks every comm/ verb
// against values computed locally (sum, reduce-scatter, all-gather, broadcast, bf16 over Gloo,
// scalar sum/max/gather, async completion order, hierarchical / compressed / multi-channel all-reduce;
// on 4 ranks, a CUDA graph's agreement and bytes over its groups). Prints "rank R ok" or exits
// non-zero with the failure.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "comm/collectives.h"
#include "comm/mesh.h"
#include "comm/world.h"
#include "train/step_graph.h"

#define EXPECT_TRUE_OR_DIE(cond)                                                       \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "rank %d: check failed: %s (line %d)\n", r, #cond, __LINE__); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

// A CUDA graph's groups on 4 ranks as dp 2 x tp 2 and as pp 2 x tp 2 (train::graph_comm, here over
// Gloo on the CPU): one rank's "no" to the capture reaches every rank; bytes are counted per group.
static bool check_graph_agreement(slm::comm::World& w) {
  using namespace slm::comm;
  const int r = w.world.rank;
  // `first`, `second`: the dimensions in the order graph_comm counts them (pp, tp, dp).
  const auto check = [&](const MeshShape& shape, const std::string& what, const std::string& first,
                         const std::string& second) {
    ProcessGroups pg = make_process_groups(w, shape);
    const auto group = [&pg](const std::string& name) { return name == "pp" ? pg.pp : name == "tp" ? pg.tp : pg.dp; };
    pg.site = w.world;
    const slm::train::GraphComm c = slm::train::graph_comm(pg, 60);
    bool ok = c.all(true);
    for (int no = 0; no < 4; ++no) ok = ok && !c.all(r != no);
    const std::vector<int64_t> before = c.sent();
    c.add_sent({5, 7});
    const std::vector<int64_t> after = c.sent();
    ok = ok && c.what == what && after.size() == 2 && after[0] - before[0] == 5 && after[1] - before[1] == 7 &&
         after[0] == bytes_sent(group(first)) && after[1] == bytes_sent(group(second));
    if (!ok) std::fprintf(stderr, "rank %d: a graph's agreement or bytes over %s are wrong\n", r, what.c_str());
    return ok;
  };
  return check({{"dp", "tp"}, {2, 2}}, "tensor parallelism's collectives, the gradients' all-reduce", "tp", "dp") &&
         check({{"pp", "tp"}, {2, 2}}, "the stages' messages, tensor parallelism's collectives", "pp", "tp");
}

int main() {
  using namespace slm::comm;
  World w = init_world(DistConfig{}, "cpu");
  ProcessGroups pg = make_process_groups(w, {{"dp"}, {w.world.size}});
  const Group& g = pg.dp;
  const int r = g.rank, n = g.size;
  // all_reduce_sum: rank k contributes (k+1) * [1, 2, 3].
  at::Tensor t = at::tensor({1.f, 2.f, 3.f}) * (r + 1);
  all_reduce_sum(t, g);
  const float tri = n * (n + 1) / 2.f;
  EXPECT_TRUE_OR_DIE(t.equal(at::tensor({1.f, 2.f, 3.f}) * tri));
  // bf16 travels as fp32 over Gloo and comes back as bf16.
  at::Tensor b = at::ones({4}, at::kBFloat16) * (r + 1);
  all_reduce_sum(b, g);
  EXPECT_TRUE_OR_DIE(b.scalar_type() == at::kBFloat16 && b.to(at::kFloat).equal(at::ones({4}) * tri));
  // reduce_scatter_sum: flat of n*2 values; rank k keeps [2k, 2k+2) of the sum.
  at::Tensor flat = at::arange(2 * n, at::kFloat) * (r + 1), shard = at::empty({2});
  reduce_scatter_sum(shard, flat, g);
  EXPECT_TRUE_OR_DIE(shard.equal(at::tensor({2.f * r, 2.f * r + 1}) * tri));
  // all_gather_into: rank k contributes [k, k]; everyone sees [0,0,1,1,...].
  at::Tensor mine = at::full({2}, static_cast<float>(r)), all = at::empty({2 * n});
  all_gather_into(all, mine, g);
  EXPECT_TRUE_OR_DIE(all.equal(at::arange(n, at::kFloat).repeat_interleave(2)));
  // broadcast from the last rank.
  at::Tensor c = at::full({3}, static_cast<float>(r));
  broadcast(c, n - 1, g);
  EXPECT_TRUE_OR_DIE(c.equal(at::full({3}, static_cast<float>(n - 1))));
  // Async: several in flight, completion steps run on wait, in any order of waiting.
  std::vector<at::Tensor> ts;
  std::vector<Pending> ps;
  int done = 0;
  for (int k = 0; k < 4; ++k) {
    ts.push_back(at::full({1000}, static_cast<float>(k)));
    ps.push_back(then(all_reduce_sum_async(ts.back(), g), [&done] { ++done; }));
  }
  for (int k = 3; k >= 0; --k) ps[static_cast<size_t>(k)].wait();
  EXPECT_TRUE_OR_DIE(done == 4);
  for (int k = 0; k < 4; ++k) EXPECT_TRUE_OR_DIE(ts[static_cast<size_t>(k)].equal(at::full({1000}, k * static_cast<float>(n))));
  // Scalars.
  EXPECT_TRUE_OR_DIE(sum(1.5, g) == 1.5 * n);
  EXPECT_TRUE_OR_DIE(max(static_cast<double>(r), g) == n - 1);
  // gather: every rank's values in rank order.
  const std::vector<double> each = gather({static_cast<double>(r), 10.0 * r}, g);
  EXPECT_TRUE_OR_DIE(each.size() == 2 * static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) EXPECT_TRUE_OR_DIE(each[2 * q] == q && each[2 * q + 1] == 10.0 * q);
  require_same("same text", g, "check");
  // WAN-aware all-reduce (comm/hierarchy.h) against the flat one, on the same random tensor of an
  // odd length: channels (3, tiny chunks) and, with an even world, hierarchical over sites of
  // n/2 ranks (fp32: 1e-5; bf16 across sites: 1e-2 relative). Once done, nothing of it holds the
  // tensor (Gloo's worker may drop its work a moment after the wait returns): a chunked
  // all-reduce whose pieces held each other kept every step's work and tensors for good.
  auto released = [](const at::Tensor& t) {
    for (int i = 0; i < 500 && t.storage().use_count() > 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return t.storage().use_count() == 1;
  };
  auto compare = [&](WanOptions o, double tol) {
    Group h = pg.dp;
    make_wan_group(w, h, o);
    at::Tensor x = at::randn({1001}, at::TensorOptions().dtype(at::kFloat)) * (r + 1), y = x.clone();
    all_reduce_sum(x, g);
    all_reduce_sum(y, h);
    const bool free = released(y);
    if (!free) std::fprintf(stderr, "rank %d: the all-reduce still holds its tensor\n", r);
    return free && (x - y).abs().max().item<double>() <= tol * x.abs().max().item<double>();
  };
  EXPECT_TRUE_OR_DIE(compare({0, false, 3, 0.001, "", {}}, 1e-6));
  // auto chunks (chunk_mb 0) on a link whose α·β is tiny: 1001 values in 8 chunks
  EXPECT_TRUE_OR_DIE(compare({0, false, 4, 0, "", {1e-4, 1e3}}, 1e-6));
  if (n % 2 == 0 && n >= 4) {
    EXPECT_TRUE_OR_DIE(compare({n / 2, false, 1, 4, "", {}}, 1e-5));
    EXPECT_TRUE_OR_DIE(compare({n / 2, true, 1, 4, "", {}}, 1e-2));
    EXPECT_TRUE_OR_DIE(compare({n / 2, false, 3, 0, "", {1e-4, 1e3}}, 1e-5));  // hierarchical, chunked across
  }
  if (n == 4 && !check_graph_agreement(w)) return 1;
  barrier(g);
  std::printf("rank %d ok\n", r);
  return 0;
}
