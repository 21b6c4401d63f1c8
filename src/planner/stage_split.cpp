// planner/stage_split.cpp: see stage_split.h.
#include "planner/stage_split.h"

#include <limits>
#include <utility>

namespace slm::planner {

std::vector<int64_t> split_layers(int64_t n_layer, int stages, const StageCost& cost) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const int64_t L = n_layer;
  const size_t S = static_cast<size_t>(stages);
  if (stages < 1 || L < stages) return {};
  // best[s][e]: (slowest, sum) over the first s+1 stages holding layers [0, e); from[s][e]: start of stage s.
  using Score = std::pair<double, double>;
  std::vector<std::vector<Score>> best(S, std::vector<Score>(static_cast<size_t>(L) + 1, {inf, inf}));
  std::vector<std::vector<int64_t>> from(S, std::vector<int64_t>(static_cast<size_t>(L) + 1, -1));
  for (int64_t e = 1; e <= L; ++e) {
    const double c = cost(0, 0, e);
    best[0][static_cast<size_t>(e)] = {c, c};
    from[0][static_cast<size_t>(e)] = 0;
  }
  for (size_t s = 1; s < S; ++s)
    for (int64_t e = static_cast<int64_t>(s) + 1; e <= L; ++e)
      for (int64_t b = static_cast<int64_t>(s); b < e; ++b) {
        const Score& prev = best[s - 1][static_cast<size_t>(b)];
        if (prev.first == inf) continue;
        const double c = cost(static_cast<int>(s), b, e);
        const Score cand{std::max(prev.first, c), prev.second + c};
        if (cand < best[s][static_cast<size_t>(e)]) best[s][static_cast<size_t>(e)] = cand, from[s][static_cast<size_t>(e)] = b;
      }
  if (best[S - 1][static_cast<size_t>(L)].first == inf) return {};
  std::vector<int64_t> cuts(S + 1, 0);
  cuts[S] = L;
  for (size_t s = S - 1; s > 0; --s) cuts[s] = from[s][static_cast<size_t>(cuts[s + 1])];
  return cuts;
}

}  // namespace slm::planner
