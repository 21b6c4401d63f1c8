// embed/vector_index.h: the index's vectors in FAISS (vectors.faiss), searched by inner product
// (= cosine: the vectors are unit length).
// Owns: VectorIndexSpec (kind flat | hnsw | ivf, storage fp32 | fp16) and VectorIndex (build,
// add, search, read, write). flat is exact (IndexFlatIP in an id map; fp16 storage via a scalar
// quantizer); hnsw is a graph for large corpora (M links per node); ivf clusters the vectors
// (trained on the first batch added) and searches the `nprobe` nearest clusters.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace faiss {
struct Index;
}

namespace slm::embed {

struct VectorIndexSpec {
  std::string kind = "flat";   // flat | hnsw | ivf
  std::string dtype = "fp32";  // fp32 | fp16 (what each stored vector takes: 4 or 2 bytes a number)
  int64_t hnsw_m = 32;         // hnsw: links per node
  int64_t ivf_lists = 0;       // ivf: clusters; 0 = about 4 sqrt(n), at least 39 vectors each
};
void validate(const VectorIndexSpec& s);  // UserError naming the bad value

struct SearchResult {
  std::vector<int64_t> ids;    // (queries x k), -1 where fewer than k entries exist
  std::vector<float> scores;   // inner products, best first per query
};

class VectorIndex {
 public:
  // An empty index for d-dimensional vectors; ivf is trained on the first add().
  VectorIndex(const VectorIndexSpec& spec, int64_t dim);
  static VectorIndex read(const std::string& path);  // UserError when missing or corrupt
  VectorIndex(VectorIndex&&) noexcept;
  ~VectorIndex();
  void add(const float* x, int64_t n, const int64_t* ids);
  void write(const std::string& path) const;
  int64_t size() const;
  int64_t dim() const;
  // k nearest by inner product for each of n queries; `effort` = HNSW's efSearch or IVF's nprobe
  // (0 = a default: max(64, 2k) and 16). Exact for flat.
  SearchResult search(const float* q, int64_t n, int64_t k, int64_t effort = 0) const;

 private:
  explicit VectorIndex(std::unique_ptr<faiss::Index> index);
  std::unique_ptr<faiss::Index> index_;
  VectorIndexSpec spec_;  // for an ivf index not made yet
  int64_t dim_ = 0;
};

}  // namespace slm::embed
