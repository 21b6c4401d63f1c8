// data/prepare.h: raw text -> tokenized, split, sharded dataset (`slm data prepare`).
// Owns: PrepareOptions and prepare_dataset. Documents are assigned to train or validation by a
// seeded shuffle of document indices (exactly round(val_fraction * documents) go to validation;
// a corpus of one document gives the last round(val_fraction * tokens) of its tokens instead),
// encoded in parallel in ~1 MB chunks, and written in corpus order, each document preceded by
// the end-of-text token (llm.c's convention), into shards of at most shard_tokens tokens
// (a document may continue in the next shard). The output directory appears only when complete.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/manifest.h"

namespace slm::data {

struct PrepareOptions {
  std::vector<std::string> inputs;   // files, directories, globs
  CorpusOptions corpus;
  std::string tokenizer_dir;         // vocab.json + merges.txt
  std::string out;                   // dataset directory to create
  std::string eot = "<|endoftext|>";  // special token that separates documents
  double val_fraction = 0.05;        // share of documents (one document: of tokens) held out, in [0, 0.5]
  uint64_t seed = 1337;              // for the document split
  int64_t shard_tokens = 100'000'000;  // tokens per shard file, at most 2^31 - 1
  int threads = 0;                   // 0 = all cores
  bool overwrite = false;            // replace an existing `out`
  bool quiet = false;                // no progress output
};

Manifest prepare_dataset(const PrepareOptions& opt);

// Which documents go to validation: a seeded choice of round(fraction * n) indices (at least
// one and at most n - 1 when fraction > 0 and n >= 2; none when n < 2). Exposed for tests.
std::vector<bool> choose_val_docs(int64_t n, double fraction, uint64_t seed);

}  // namespace slm::data
