// planner/pool_cores.cpp: see pool_cores.h.
#include "planner/pool_cores.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace slm::planner {

namespace {

struct PoolCores {
  std::vector<size_t> ranks;
  double alone = 0, speedup = 0;  // means over its ranks
  double cap = 0;                 // the most it can have: its ranks, its quota, the machine's CPUs
  double measured = 0, fitted = 0;
};

// The machine's CPUs and cores where every rank on it computes with one CPU thread and all saw
// the same; {0, 0} otherwise (left as measured).
std::pair<int, int> machine_cpus(const std::vector<size_t>& on, const std::vector<CpuFacts>& facts) {
  const CpuFacts& f = facts[on.front()];
  for (size_t r : on)
    if (facts[r].threads != 1 || facts[r].cpus != f.cpus || facts[r].cores != f.cores) return {0, 0};
  return f.cpus > 0 && f.cores > 0 ? std::pair{f.cpus, f.cores} : std::pair{0, 0};
}

// The pools of one machine's ranks, as measured and capped.
std::map<int, PoolCores> pools_on(const std::vector<size_t>& on, const std::vector<RankProfile>& ranks,
                                  const std::vector<CpuFacts>& facts, int cpus) {
  std::map<int, PoolCores> pools;
  for (size_t r : on) {
    PoolCores& p = pools[ranks[r].host];
    p.ranks.push_back(r);
    p.alone += ranks[r].alone_cores, p.speedup += ranks[r].solo_speedup;
  }
  for (auto& [host, p] : pools) {
    const double n = static_cast<double>(p.ranks.size()), quota = facts[p.ranks.front()].quota_cores;
    p.alone /= n, p.speedup /= n;
    p.measured = n * p.alone / p.speedup;
    p.cap = std::min({n, static_cast<double>(cpus), quota > 0 ? quota : std::numeric_limits<double>::infinity()});
    p.fitted = std::min(p.measured, p.cap);
  }
  return pools;
}

// Scales the pools' cores to `total` in proportion, a pool at most its cap (what one at its cap
// cannot take the others share).
void fill_to(std::map<int, PoolCores>& pools, double total) {
  for (size_t round = 0; round < pools.size(); ++round) {
    double at_cap = 0, free = 0;
    for (const auto& [host, p] : pools) (p.fitted >= p.cap ? at_cap : free) += p.fitted;
    if (free <= 0) return;
    const double scale = std::max(0.0, total - at_cap) / free;
    bool capped = false;
    for (auto& [host, p] : pools) {
      if (p.fitted >= p.cap) continue;
      p.fitted = std::min(p.cap, p.fitted * scale);
      capped = capped || p.fitted >= p.cap;
    }
    if (!capped) return;
  }
}

}  // namespace

std::vector<std::string> fit_pool_cores(std::vector<RankProfile>& ranks, const std::vector<CpuFacts>& facts) {
  std::map<int, std::vector<size_t>> machines;
  for (size_t r = 0; r < ranks.size() && r < facts.size(); ++r)
    machines[ranks[r].machine < 0 ? -1 - ranks[r].host : ranks[r].machine].push_back(r);
  std::vector<std::string> lines;
  for (const auto& [machine, on] : machines) {
    const auto [cpus, cores] = machine_cpus(on, facts);
    if (cpus == 0) continue;
    std::map<int, PoolCores> pools = pools_on(on, ranks, facts, cpus);
    double work = 0, measured = 0, total = 0;
    for (const auto& [host, p] : pools) work += p.cap, measured += p.measured, total += p.fitted;
    const double hi = std::min(work, static_cast<double>(cpus)), lo = std::min(work, static_cast<double>(cores));
    fill_to(pools, total > hi ? hi : total < lo ? lo : total);
    double fitted = 0;
    bool changed = false;
    for (auto& [host, p] : pools) {
      fitted += p.fitted;
      if (std::abs(p.fitted / p.measured - 1) < 1e-9) continue;
      changed = true;
      for (size_t r : p.ranks) ranks[r].solo_speedup = std::max(1.0, p.speedup * p.measured / p.fitted);
    }
    if (changed)
      lines.push_back(fmt::format("machine {} ({} CPUs, {} cores): {} ranks in {} pool{} on {:.2f} cores as measured, fitted to {:.2f}",
                                  machine, cpus, cores, on.size(), pools.size(), pools.size() == 1 ? "" : "s", measured, fitted));
  }
  return lines;
}

}  // namespace slm::planner
