// embed/index.h: an index folder a user can keep, copy and query:
//   index.sqlite     entries (document, source, byte range, text), their FTS5 table, metadata
//   vectors.faiss    the vectors (vector_index.h), FAISS id = entry id
//   embeddings.npy   the same vectors, row = entry id, for NumPy and other tools
// Owns: create_index / append_index (both atomic: a temporary folder renamed into place, so an
// interrupted run leaves the old index or none, never half of one) and open_index. Metadata keys
// that must agree for an append (model, tokenizer, pooling, ...) are listed in kIdentityKeys.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "embed/store.h"
#include "embed/vector_index.h"

namespace slm::embed {

using Meta = std::map<std::string, std::string>;
// Metadata an appended batch must share with the index (else it is refused in one line).
extern const std::vector<std::string> kIdentityKeys;

struct NewEntries {
  std::vector<Entry> entries;  // ids and doc numbers are assigned here (from 0, or after the index's)
  std::vector<float> vectors;  // entries.size() x dim, unit length
  int64_t dim = 0;
};

// A new index at `dir` (UserError if it exists and not `force`). `meta` must hold kIdentityKeys.
void create_index(const std::string& dir, const Meta& meta, const VectorIndexSpec& spec, NewEntries batch,
                  bool force);
// Adds a batch to the index at `dir`; returns how many entries it had before.
int64_t append_index(const std::string& dir, const Meta& meta, NewEntries batch);

struct OpenIndex {
  Store store;
  VectorIndex vectors;
  Meta meta;
};
OpenIndex open_index(const std::string& dir);  // UserError when missing, incomplete or corrupt

uint16_t fp16_bits(float f);  // IEEE half, round to nearest even (exposed for tests)

}  // namespace slm::embed
