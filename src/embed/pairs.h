// embed/pairs.h: positive pairs for contrastive tuning, cut from the user's own documents, so no
// labelled data is needed. Owns: PairOptions, Pair, eligible_docs and step_pairs.
// A pair is a query-like span of a document (the anchor) and the span that follows it (the
// positive), the same shape as `slm embed eval`'s task (a document's first tokens against the
// rest) but at a random place in the document. The other pairs of the batch are the negatives,
// so a batch takes distinct documents. Pairs depend only on (seed, step, index): a resumed run,
// or any number of data-parallel ranks each cutting its slice, sees the same global batch.
#pragma once
#include <cstdint>
#include <vector>

namespace slm::embed {

struct PairOptions {
  int64_t anchor_min = 16, anchor_max = 64;  // anchor tokens, drawn uniformly (at most window - 1)
  int64_t positive_min = 16;                 // a document needs anchor_min + positive_min tokens
  int64_t window = 0;                        // at most this many tokens per side, the eot included
                                             // (0: the model's context)
  uint64_t seed = 1337;
};

struct Pair {
  int64_t doc = 0;                           // index into the tokenized documents
  std::vector<int64_t> anchor, positive;     // each: eot, then the span's tokens
};

// Indices of the documents long enough for a pair.
std::vector<int64_t> eligible_docs(const std::vector<std::vector<uint32_t>>& docs, const PairOptions& o);

// Pairs [begin, end) of step `step`'s global batch of `batch` pairs: `batch` distinct documents
// of `eligible` (batch <= eligible.size()), each cut at a random place.
std::vector<Pair> step_pairs(const std::vector<std::vector<uint32_t>>& docs, const std::vector<int64_t>& eligible,
                             const PairOptions& o, int64_t step, int64_t batch, int64_t begin, int64_t end,
                             int64_t eot_id);

}  // namespace slm::embed
