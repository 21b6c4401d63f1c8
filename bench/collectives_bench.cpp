// bench/collectives_bench.cpp: how long the ring collectives the cost model prices take on the
// running job's world: all-gather and all-reduce of each size given (bytes moved in all, as
// `slm probe` counts them), median of 7 after a barrier each, printed by rank 0 as one line per
// size. Run under a launcher or the testbed, e.g.
//   sudo slm testbed run cluster.toml -- build/bench_collectives 4 315000 3150000
// (docs/planner.md: per-hop latency of mid-sized collectives over the testbed's WAN).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "comm/collectives.h"
#include "comm/world.h"

namespace {

template <class F>
double median_s(const slm::comm::Group& g, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) {
    slm::comm::barrier(g);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace slm::comm;
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_collectives BYTES [BYTES ...]\n");
    return 2;
  }
  World w = init_world(DistConfig{}, "cpu");
  const Group& g = w.world;
  for (int i = 1; i < argc; ++i) {
    const int64_t bytes = std::atoll(argv[i]);
    const int64_t numel = std::max<int64_t>(g.size, bytes / 4 / g.size * g.size);  // as the probe sizes them
    at::Tensor all = at::zeros({numel}), piece = at::ones({numel / g.size}), sum = at::ones({numel});
    const double gather = median_s(g, [&] { all_gather_into(all, piece, g); });
    const double reduce = median_s(g, [&] { all_reduce_sum(sum, g); });
    if (g.rank == 0)
      std::printf("%lld B over %d ranks: all-gather %.1f ms, all-reduce %.1f ms\n", static_cast<long long>(numel * 4),
                  g.size, 1e3 * gather, 1e3 * reduce);
  }
  return 0;
}
