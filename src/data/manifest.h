// data/manifest.h: what a prepared dataset directory holds and how it was made.
// Owns: Manifest (tokenizer identity, sources, options, per-split shard lists and counts), its
// JSON form (manifest.json), and open_dataset, which checks a directory against its manifest and
// against the tokenizer a caller is about to use.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/loader.h"
#include "data/shard.h"

namespace slm::data {

constexpr int kManifestVersion = 1;

struct ShardEntry {
  std::string file;  // relative to the dataset directory
  int64_t tokens = 0;
  std::string xxh3;  // XXH3-128 of the whole file (hex); empty in datasets made before it existed
};

struct SplitInfo {
  int64_t documents = 0;
  int64_t bytes = 0;   // text bytes of its documents
  int64_t tokens = 0;  // including one end-of-text token per document
  std::vector<ShardEntry> shards;
};

struct Manifest {
  int version = kManifestVersion;
  std::string tokenizer_path;      // read: where it is; written: relative to the dataset folder
  std::string tokenizer_identity;  // tokenizer::model_identity
  int64_t vocab_size = 0;
  int64_t eot_id = -1;
  std::string eot_token;
  int bytes_per_token = 2;
  double val_fraction = 0;
  std::string val_split = "documents";  // "documents" (a seeded choice) | "tail" (one document's last tokens)
  uint64_t seed = 0;
  CorpusOptions corpus;
  std::vector<Source> sources;
  SplitInfo train, val;
};

void write_manifest(const std::string& dir, const Manifest& m);
Manifest read_manifest(const std::string& dir);  // UserError on a missing or malformed file
// The tokenizer folder as a manifest in `dataset_dir` records it: relative to that folder (so a
// dataset and its tokenizer can move together and be used from any working directory), or
// absolute when they share no root. read_manifest resolves it back; manifests from before
// recorded it relative to the working directory of `slm data prepare`, which is tried second.
std::string tokenizer_path_from(const std::string& dataset_dir, const std::string& tokenizer_dir);

// A mixed dataset's validation split, named by the folder data.mix gives.
struct NamedSplit {
  std::string name;
  std::vector<Shard> shards;
};

struct Dataset {
  std::string dir;
  Manifest manifest;
  std::vector<Shard> train, val;
  SourceMix train_mix;              // empty, or whose the training shards are (data.mix: data/mix.h)
  std::vector<NamedSplit> mix_val;  // data.mix: each mixed dataset's own validation split
};

// Opens and validates every shard listed in the manifest: header, size, checksum (a bit flip after
// `slm data prepare`) and every token id inside the vocabulary, so a loader never serves an id
// the model cannot embed (two passes over the tokens, ~0.3 s per GB). If expected_tokenizer_identity
// is not empty and differs from the manifest's, throws a UserError naming both tokenizers.
Dataset open_dataset(const std::string& dir, const std::string& expected_tokenizer_identity = "");

}  // namespace slm::data
