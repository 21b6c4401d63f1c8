// embed/pairs.cpp: see pairs.h.
#include "embed/pairs.h"

#include <algorithm>
#include <unordered_map>

#include "util/random.h"

namespace slm::embed {

std::vector<int64_t> eligible_docs(const std::vector<std::vector<uint32_t>>& docs, const PairOptions& o) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < docs.size(); ++d)
    if (static_cast<int64_t>(docs[d].size()) >= o.anchor_min + o.positive_min) out.push_back(static_cast<int64_t>(d));
  return out;
}

std::vector<Pair> step_pairs(const std::vector<std::vector<uint32_t>>& docs, const std::vector<int64_t>& eligible,
                             const PairOptions& o, int64_t step, int64_t batch, int64_t begin, int64_t end,
                             int64_t eot_id) {
  // The step's documents: the first `batch` of a seeded Fisher-Yates shuffle, done lazily (a map
  // of the swapped slots) so a step costs O(batch), not O(documents).
  const uint64_t step_seed = mix_seed(o.seed, static_cast<uint64_t>(step));
  SplitMix64 pick(step_seed);
  std::unordered_map<int64_t, int64_t> swapped;
  auto at = [&](int64_t i) {
    auto it = swapped.find(i);
    return it == swapped.end() ? i : it->second;
  };
  const int64_t n = static_cast<int64_t>(eligible.size());
  std::vector<int64_t> chosen(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t j = i + static_cast<int64_t>(pick.below(static_cast<uint64_t>(n - i)));
    const int64_t vi = at(i), vj = at(j);
    swapped[i] = vj, swapped[j] = vi;
    chosen[static_cast<size_t>(i)] = eligible[static_cast<size_t>(vj)];
  }
  std::vector<Pair> out;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t d = chosen[static_cast<size_t>(i)];
    const std::vector<uint32_t>& ids = docs[static_cast<size_t>(d)];
    const int64_t len = static_cast<int64_t>(ids.size());
    SplitMix64 cut(mix_seed(step_seed, static_cast<uint64_t>(i) + 1));
    const int64_t a_max = std::min({o.anchor_max, o.window - 1, len - o.positive_min});
    const int64_t a = o.anchor_min + static_cast<int64_t>(cut.below(static_cast<uint64_t>(a_max - o.anchor_min + 1)));
    const int64_t start = static_cast<int64_t>(cut.below(static_cast<uint64_t>(len - a - o.positive_min + 1)));
    const int64_t p = std::min(o.window - 1, len - start - a);
    Pair pair;
    pair.doc = d;
    pair.anchor.push_back(eot_id);
    pair.anchor.insert(pair.anchor.end(), ids.begin() + start, ids.begin() + start + a);
    pair.positive.push_back(eot_id);
    pair.positive.insert(pair.positive.end(), ids.begin() + start + a, ids.begin() + start + a + p);
    out.push_back(std::move(pair));
  }
  return out;
}

}  // namespace slm::embed
