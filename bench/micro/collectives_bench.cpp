// bench/micro/collectives_bench.cpp: how long the ring collectives the cost model prices take on the
// running job's world: all-gather and all-reduce of each size given (bytes moved in all, as
// `slm probe` counts them), median of 7 after a barrier each, printed by rank 0 as one line per
// size. Run under a launcher or the testbed, e.g.
//   sudo slm testbed run cluster.toml -- build/bench_collectives 4 315000 3150000
// (docs/planner.md: per-hop latency of mid-sized collectives over the testbed's WAN).
// `bench_collectives skew MS [MS ...]`: a sum of one double (the gradient norm's) where the first
// half of the ranks arrive MS ms after the others, each rank's finish after the last arrival
// (median of 7); testbed only: the ranks must share one machine's monotonic clock.
// `bench_collectives p2p BYTES MS [MS ...]`: rank 0 sends BYTES to rank 1, which posts its receive
// MS ms later (negative: before); when it arrived (median of 5; testbed only, as skew). Gloo moves
// a message only once the receive is posted (docs/planner.md).
// `bench_collectives site L BYTES [BYTES ...]`: every site (L consecutive ranks) all-reduces BYTES
// inside itself, all sites at once (the hierarchical all-reduce's first step); each rank's time.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
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

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Every rank's finish of a one-double sum after the last arrival, the first half `skew_s` late.
std::vector<double> skewed_sum_s(const slm::comm::Group& g, double skew_s) {
  std::vector<std::vector<double>> runs;
  for (int i = 0; i < 7; ++i) {
    slm::comm::barrier(g);
    const double start = slm::comm::sum(g.rank == 0 ? now_s() + 0.5 : 0.0, g);  // one moment for all
    const double arrive = start + (g.rank < g.size / 2 ? skew_s : 0.0);
    while (now_s() < arrive) {
    }
    slm::comm::sum(1.0, g);
    std::vector<double> done(static_cast<size_t>(g.size), 0.0);
    done[static_cast<size_t>(g.rank)] = now_s() - (start + skew_s);
    runs.push_back(slm::comm::sum(done, g));
  }
  std::vector<double> median;
  for (size_t r = 0; r < static_cast<size_t>(g.size); ++r) {
    std::vector<double> t;
    for (const auto& run : runs) t.push_back(run[r]);
    std::sort(t.begin(), t.end());
    median.push_back(t[3]);
  }
  return median;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace slm::comm;
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_collectives BYTES [BYTES ...] | skew MS [MS ...] | p2p BYTES MS [MS ...] | "
                         "site L BYTES [BYTES ...]\n");
    return 2;
  }
  World w = init_world(DistConfig{}, "cpu");
  const Group& g = w.world;
  if (std::string(argv[1]) == "p2p" && argc > 2) {  // rank 0 sends at a moment, rank 1 receives MS later
    const int64_t numel = std::max<int64_t>(1, std::atoll(argv[2]) / 4);
    for (int i = 3; i < argc; ++i) {
      const double late = std::atof(argv[i]) / 1e3;
      std::vector<double> done;
      for (int k = 0; k < 5; ++k) {
        barrier(g);
        const double start = sum(g.rank == 0 ? now_s() + 0.5 : 0.0, g);
        at::Tensor t = at::ones({numel});
        while (now_s() < start + (g.rank == 1 ? late : 0.0)) {
        }
        if (g.rank == 0) send_async(t, 1, 7, g).wait();
        if (g.rank == 1) recv_async(t, 0, 7, g).wait(), done.push_back(now_s() - start);
      }
      if (g.rank != 1) continue;
      std::sort(done.begin(), done.end());
      std::printf("%lld B sent at 0, received from %s ms on: arrived at %.1f ms\n", static_cast<long long>(numel * 4),
                  argv[i], 1e3 * done[2]);
    }
    return 0;
  }
  if (std::string(argv[1]) == "site" && argc > 3) {  // every site's ranks all-reduce at once
    const int per_site = std::atoi(argv[2]);
    const int first = g.rank / per_site * per_site;
    std::vector<int> members;
    for (int r = first; r < first + per_site && r < g.size; ++r) members.push_back(r);
    const Group site = new_group(w, "site" + std::to_string(first / per_site), members);
    for (int i = 3; i < argc; ++i) {
      const int64_t numel = std::max<int64_t>(1, std::atoll(argv[i]) / 4);
      at::Tensor t = at::ones({numel});
      std::vector<double> each(static_cast<size_t>(g.size), 0.0);
      // each timing after a barrier of the world: every site starts at once
      each[static_cast<size_t>(g.rank)] = median_s(g, [&] { all_reduce_sum(t, site); });
      each = sum(each, g);
      if (g.rank != 0) continue;
      std::printf("%lld B summed in each site of %d at once: per rank (ms):", static_cast<long long>(numel * 4), per_site);
      for (double v : each) std::printf(" %.1f", 1e3 * v);
      std::printf("\n");
    }
    return 0;
  }
  if (std::string(argv[1]) == "skew") {
    for (int i = 2; i < argc; ++i) {
      const std::vector<double> t = skewed_sum_s(g, std::atof(argv[i]) / 1e3);
      if (g.rank != 0) continue;
      std::printf("one double, first half %s ms late: finish after the last arrival per rank (ms):", argv[i]);
      for (double v : t) std::printf(" %.1f", 1e3 * v);
      std::printf("\n");
    }
    return 0;
  }
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
