// data/prepare.cpp: see prepare.h.
#include "data/prepare.h"

#include <cmath>
#include <fmt/format.h>
#include <memory>

#include "tokenizer/encoder.h"
#include "tokenizer/hf_files.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/interrupt.h"
#include "util/progress.h"
#include "util/random.h"
#include "util/threads.h"

namespace slm::data {

std::vector<bool> choose_val_docs(int64_t n, double fraction, uint64_t seed) {
  std::vector<bool> val(static_cast<size_t>(n), false);
  if (fraction <= 0 || n == 0) return val;
  int64_t k = std::llround(fraction * static_cast<double>(n));
  k = std::clamp<int64_t>(k, 1, n - 1);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  SplitMix64 rng(seed);
  shuffle(idx, rng);
  for (int64_t i = 0; i < k; ++i) val[idx[i]] = true;
  return val;
}

namespace {

// Appends tokens of one split to numbered shard files, starting a new one when full.
struct SplitWriter {
  std::string dir, name;
  int bpt;
  int64_t shard_tokens;
  SplitInfo info;
  std::unique_ptr<ShardWriter> cur;

  void append(const uint32_t* t, size_t n) {
    while (n > 0) {
      if (!cur) {
        std::string file = fmt::format("{}_{:06d}.bin", name, info.shards.size());
        cur = std::make_unique<ShardWriter>(dir + "/" + file, bpt);
        info.shards.push_back({file, 0, ""});
      }
      size_t room = static_cast<size_t>(shard_tokens - cur->tokens());
      size_t take = std::min(room, n);
      cur->append(t, take);
      t += take;
      n -= take;
      info.tokens += static_cast<int64_t>(take);
      if (cur->tokens() == shard_tokens) close();
    }
  }
  void close() {
    if (!cur) return;
    info.shards.back().tokens = cur->tokens();
    cur->commit();
    cur.reset();
    info.shards.back().xxh3 = hash_file_hex(dir + "/" + info.shards.back().file);
  }
};

}  // namespace

Manifest prepare_dataset(const PrepareOptions& opt) {
  if (!(opt.val_fraction >= 0 && opt.val_fraction <= 0.5))
    throw UserError(fmt::format("--val-fraction {} is outside [0, 0.5]", opt.val_fraction));
  if (opt.shard_tokens < 1 || opt.shard_tokens > kMaxShardTokens)
    throw UserError(fmt::format("--shard-tokens {} is outside [1, {}]", opt.shard_tokens,
                                kMaxShardTokens));
  if (opt.out.empty()) throw UserError("--out: no output directory given");

  tokenizer::BpeModel model = tokenizer::load_tokenizer(opt.tokenizer_dir);
  int32_t eot = model.special_id(opt.eot);
  if (eot < 0)
    throw UserError(fmt::format("{}: tokenizer has no special token \"{}\" to separate documents",
                                opt.tokenizer_dir, opt.eot));
  Corpus corpus = load_corpus(opt.inputs, opt.corpus);
  const int64_t ndocs = static_cast<int64_t>(corpus.docs.size());
  if (opt.val_fraction > 0 && ndocs < 2)
    throw UserError(fmt::format(
        "corpus has only {} document; a validation split needs at least 2 (split files into "
        "documents with --separator, or pass --val-fraction 0)",
        ndocs));
  std::vector<bool> is_val = choose_val_docs(ndocs, opt.val_fraction, opt.seed);

  Manifest man;
  man.tokenizer_path = tokenizer_path_from(opt.out, opt.tokenizer_dir);
  man.tokenizer_identity = tokenizer::model_identity(model);
  man.vocab_size = model.vocab_size();
  man.eot_id = eot;
  man.eot_token = opt.eot;
  man.bytes_per_token = bytes_per_token_for(model.vocab_size());
  man.val_fraction = opt.val_fraction;
  man.seed = opt.seed;
  man.corpus = opt.corpus;
  man.sources = corpus.sources;

  AtomicDir out(opt.out, opt.overwrite);
  SplitWriter train{out.dir(), "train", man.bytes_per_token, opt.shard_tokens, {}, nullptr};
  SplitWriter val{out.dir(), "val", man.bytes_per_token, opt.shard_tokens, {}, nullptr};

  // Work in batches of chunks (~64 MB of text) so memory stays bounded on large corpora.
  struct Chunk {
    int64_t doc;
    std::string_view text;
  };
  const int threads = opt.threads > 0 ? opt.threads : default_threads();
  std::vector<std::unique_ptr<tokenizer::Encoder>> encoders(threads);
  Progress progress("encode", corpus.bytes, "B", opt.quiet);
  const uint32_t eot_u = static_cast<uint32_t>(eot);
  int64_t doc = 0;
  while (doc < ndocs) {
    std::vector<Chunk> chunks;
    size_t batch_bytes = 0;
    for (; doc < ndocs && batch_bytes < (64u << 20); ++doc) {
      for (std::string_view c : tokenizer::split_for_threads(corpus.docs[doc], 1 << 20))
        chunks.push_back({doc, c});
      batch_bytes += corpus.docs[doc].size();
    }
    std::vector<std::vector<uint32_t>> ids(chunks.size());
    parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t i, int w) {
      throw_if_interrupted();
      if (!encoders[w]) encoders[w] = std::make_unique<tokenizer::Encoder>(model);
      encoders[w]->encode(chunks[i].text, ids[i]);
      progress.add(static_cast<int64_t>(chunks[i].text.size()));
    });
    for (size_t i = 0; i < chunks.size(); ++i) {
      SplitWriter& w = is_val[chunks[i].doc] ? val : train;
      if (i == 0 || chunks[i].doc != chunks[i - 1].doc) {  // a document starts
        w.append(&eot_u, 1);
        w.info.documents += 1;
        w.info.bytes += static_cast<int64_t>(corpus.docs[chunks[i].doc].size());
      }
      w.append(ids[i].data(), ids[i].size());
    }
    throw_if_interrupted();
  }
  progress.finish();
  train.close();
  val.close();
  man.train = train.info;
  man.val = val.info;
  write_manifest(out.dir(), man);
  out.commit();
  return man;
}

}  // namespace slm::data
