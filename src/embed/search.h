// embed/search.h: ranked answers from an index: by vector (FAISS), by words (FTS5 BM25) or both
// fused by reciprocal rank (hybrid).
// Owns: Hit, SearchMode, fuse_rrf and search_index (one query, its vector already computed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "embed/index.h"

namespace slm::embed {

struct Hit {
  int64_t id = 0;
  double score = 0;  // vector: cosine; lexical: -bm25; hybrid: the fused RRF score
};

enum class SearchMode { kVector, kLexical, kHybrid };
SearchMode parse_mode(const std::string& name);  // vector | lexical | hybrid; else UserError

// Reciprocal-rank fusion: score(id) = sum over lists of 1 / (c + rank), rank from 1; the k best,
// ties by id. (Cormack et al. 2009; c = 60 as there.)
std::vector<Hit> fuse_rrf(const std::vector<std::vector<Hit>>& lists, int64_t k, double c = 60);

// The k best entries for one query (k beyond the index's size: all of them). `vec` (dim floats) is
// needed for vector and hybrid; `effort` is the vector index's search effort (hnsw: efSearch; ivf:
// clusters probed; 0 = its default); hybrid fuses the best `depth` of each list (default:
// max(k, 50)). The words of `text` count once each, the first kMaxQueryTerms of them (store.h).
std::vector<Hit> search_index(const OpenIndex& ix, SearchMode mode, const std::string& text, const float* vec,
                              int64_t k, int64_t effort = 0, int64_t depth = 0);

}  // namespace slm::embed
