// embed/search.cpp: see search.h.
#include "embed/search.h"

#include <algorithm>
#include <map>

#include "util/error.h"

namespace slm::embed {

SearchMode parse_mode(const std::string& name) {
  if (name == "vector") return SearchMode::kVector;
  if (name == "lexical") return SearchMode::kLexical;
  if (name == "hybrid") return SearchMode::kHybrid;
  throw UserError("--mode '" + name + "' is not vector, lexical or hybrid");
}

std::vector<Hit> fuse_rrf(const std::vector<std::vector<Hit>>& lists, int64_t k, double c) {
  std::map<int64_t, double> score;
  for (const auto& list : lists)
    for (size_t r = 0; r < list.size(); ++r) score[list[r].id] += 1.0 / (c + static_cast<double>(r + 1));
  std::vector<Hit> out;
  for (const auto& [id, s] : score) out.push_back({id, s});
  std::stable_sort(out.begin(), out.end(), [](const Hit& a, const Hit& b) { return a.score > b.score; });
  if (static_cast<int64_t>(out.size()) > k) out.resize(static_cast<size_t>(k));
  return out;
}

std::vector<Hit> search_index(const OpenIndex& ix, SearchMode mode, const std::string& text, const float* vec,
                              int64_t k, int64_t effort, int64_t depth) {
  // No list is longer than the index: a k of a billion must not allocate a billion slots.
  const int64_t size = std::max<int64_t>(1, ix.vectors.size());
  k = std::min(k, size);
  const int64_t n = std::min(size, mode == SearchMode::kHybrid ? std::max<int64_t>(k, depth > 0 ? depth : 50) : k);
  std::vector<Hit> by_vector, by_words;
  if (mode != SearchMode::kLexical) {
    const SearchResult r = ix.vectors.search(vec, 1, n, effort);
    for (size_t i = 0; i < r.ids.size(); ++i)
      if (r.ids[i] >= 0) by_vector.push_back({r.ids[i], r.scores[i]});
  }
  if (mode != SearchMode::kVector)
    for (const auto& [id, s] : ix.store.lexical(text, n)) by_words.push_back({id, s});
  if (mode == SearchMode::kVector) return by_vector;
  if (mode == SearchMode::kLexical) return by_words;
  return fuse_rrf({by_vector, by_words}, k);
}

}  // namespace slm::embed
