// bench/micro/planner_search_bench.cpp: how long the layout search takes (planner/search.h) on large
// synthetic clusters, one thread: 64 ranks over 4 sites of one device type, and 512 ranks of three
// device types (T4, A30, A100) over 8 sites, GPT-2 medium, profiles from the device table.
// Usage: bench_planner_search   (prints one line per cluster)
#include <chrono>
#include <cstdio>

#include "planner/devices.h"
#include "planner/search.h"

using namespace slm::planner;

static void run(const char* name, const std::vector<std::pair<int, std::string>>& sites, int64_t batch) {
  Cluster c;
  for (size_t s = 0; s < sites.size(); ++s) {
    c.sites.push_back("s" + std::to_string(s));
    const DeviceSpec* d = find_device(sites[s].second);
    for (int k = 0; k < sites[s].first; ++k) c.ranks.push_back({static_cast<int>(s), d->name, d->memory_gb, d->price_per_hour, 0});
  }
  c.link.assign(sites.size(), std::vector<Link>(sites.size(), Link{0.01 + 0.001 * sites.size(), 1.25e9}));
  for (size_t s = 0; s < sites.size(); ++s) c.link[s][s] = Link{1e-5, 12.5e9};
  slm::parallel::ModelShape m;
  m.n_layer = 24, m.n_head = 16, m.n_embd = 1024, m.vocab_padded = 50304, m.block_size = 1024;
  const ProfileShape shape{1024, 16, 50304, 1024, "fp16"};
  std::vector<int64_t> sizes{1, 2, 4, 8, 16, 32};
  const ComputeProfile prof = profile_from_devices(c, shape, 1e11, sizes);
  CostInputs in{&c, &prof, m, 1024, 25, 0, {}};
  SearchOptions o;
  o.batch_size = batch, o.micro_batch = 8;
  const auto t0 = std::chrono::steady_clock::now();
  const SearchResult r = search_plans(in, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %d ranks, %zu sites: %lld layouts predicted in %.3f s; best: %s, %.3f s/step\n", name, c.world(),
              sites.size(), static_cast<long long>(r.evaluated), s, describe_candidate(r.top[0].c).c_str(), r.top[0].p.step_s);
}

int main() {
  run("64 ranks, 1 type", {{16, "A100"}, {16, "A100"}, {16, "A100"}, {16, "A100"}}, 512);
  run("512 ranks, 3 types", {{64, "T4"}, {64, "T4"}, {64, "A30"}, {64, "A30"}, {64, "A30"}, {64, "A100"}, {64, "A100"}, {64, "A100"}},
      1024);
  return 0;
}
