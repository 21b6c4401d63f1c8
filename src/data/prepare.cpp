// data/prepare.cpp: see prepare.h.
#include "data/prepare.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
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
  if (fraction <= 0 || n < 2) return val;
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

// The one document's tokens (its chunks' ids, in order): the first 1 - fraction of them go to
// train, the rest, cut at a token boundary, to validation; each part starts with the end-of-text
// token. Returns the line that says so.
std::string write_tail_split(const std::vector<std::vector<uint32_t>>& ids, int64_t doc_bytes, double fraction, uint32_t eot,
                      const tokenizer::BpeModel& model, SplitWriter& train, SplitWriter& val) {
  int64_t n = 0;
  for (const auto& v : ids) n += static_cast<int64_t>(v.size());
  if (n < 2)
    throw UserError(fmt::format("corpus is one document of {} token(s): too short to hold out a validation part "
                                "(pass --val-fraction 0)",
                                n));
  const int64_t k = std::clamp<int64_t>(std::llround(fraction * static_cast<double>(n)), 1, n - 1);
  std::vector<uint32_t> tail;  // the validation part: the last k tokens
  train.append(&eot, 1);
  int64_t seen = 0;
  for (const auto& v : ids) {
    const auto before_cut = static_cast<size_t>(std::clamp<int64_t>(n - k - seen, 0, static_cast<int64_t>(v.size())));
    train.append(v.data(), before_cut);
    tail.insert(tail.end(), v.begin() + static_cast<std::ptrdiff_t>(before_cut), v.end());
    seen += static_cast<int64_t>(v.size());
  }
  val.append(&eot, 1);
  val.append(tail.data(), tail.size());
  const auto val_bytes = static_cast<int64_t>(tokenizer::decode(model, tail).size());
  train.info.documents += 1;
  val.info.documents += 1;
  train.info.bytes += doc_bytes - val_bytes;
  val.info.bytes += val_bytes;
  return fmt::format("prepare: one document: its last {} of {} tokens ({:.1f}%) are the validation split", k, n,
                     100.0 * static_cast<double>(k) / static_cast<double>(n));
}

void check_options(const PrepareOptions& opt) {
  if (!(opt.val_fraction >= 0 && opt.val_fraction <= 0.5))
    throw UserError(fmt::format("--val-fraction {} is outside [0, 0.5]", opt.val_fraction));
  if (opt.shard_tokens < 1 || opt.shard_tokens > kMaxShardTokens)
    throw UserError(fmt::format("--shard-tokens {} is outside [1, {}]", opt.shard_tokens,
                                kMaxShardTokens));
  if (opt.out.empty()) throw UserError("--out: no output directory given");
}

// The manifest's description of the dataset (the splits' counts come after encoding).
Manifest describe(const PrepareOptions& opt, const tokenizer::BpeModel& model, const Corpus& corpus, int32_t eot,
                  bool tail_split) {
  Manifest man;
  man.tokenizer_path = tokenizer_path_from(opt.out, opt.tokenizer_dir);
  man.tokenizer_identity = tokenizer::model_identity(model);
  man.vocab_size = model.vocab_size();
  man.eot_id = eot;
  man.eot_token = opt.eot;
  man.bytes_per_token = bytes_per_token_for(model.vocab_size());
  man.val_fraction = opt.val_fraction;
  man.val_split = tail_split ? "tail" : "documents";
  man.seed = opt.seed;
  man.corpus = opt.corpus;
  man.sources = corpus.sources;
  return man;
}

// Encodes the corpus on `threads` threads into the train and val writers, each document after an
// end-of-text token in the split is_val gives it, or (tail_split: one document) its last
// val_fraction of tokens into val. Works in batches of chunks (~64 MB of text) so memory stays
// bounded on large corpora. Returns what the one-document split held out ("" otherwise).
std::string encode_corpus(const PrepareOptions& opt, const tokenizer::BpeModel& model, const Corpus& corpus,
                          uint32_t eot, const std::vector<bool>& is_val, bool tail_split, SplitWriter& train,
                          SplitWriter& val) {
  struct Chunk {
    int64_t doc;
    std::string_view text;
  };
  const int64_t ndocs = static_cast<int64_t>(corpus.docs.size());
  const int threads = opt.threads > 0 ? opt.threads : default_threads();
  std::vector<std::unique_ptr<tokenizer::Encoder>> encoders(threads);
  Progress progress("encode", corpus.bytes, "B", opt.quiet);
  int64_t doc = 0;
  std::string tail_note;
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
    if (tail_split)
      tail_note = write_tail_split(ids, static_cast<int64_t>(corpus.docs[0].size()), opt.val_fraction, eot, model,
                                   train, val);
    for (size_t i = 0; i < chunks.size() && !tail_split; ++i) {
      SplitWriter& w = is_val[chunks[i].doc] ? val : train;
      if (i == 0 || chunks[i].doc != chunks[i - 1].doc) {  // a document starts
        w.append(&eot, 1);
        w.info.documents += 1;
        w.info.bytes += static_cast<int64_t>(corpus.docs[chunks[i].doc].size());
      }
      w.append(ids[i].data(), ids[i].size());
    }
    throw_if_interrupted();
  }
  progress.finish();
  return tail_note;
}

}  // namespace

Manifest prepare_dataset(const PrepareOptions& opt) {
  check_options(opt);
  tokenizer::BpeModel model = tokenizer::load_tokenizer(opt.tokenizer_dir);
  int32_t eot = model.special_id(opt.eot);
  if (eot < 0)
    throw UserError(fmt::format("{}: tokenizer has no special token \"{}\" to separate documents",
                                opt.tokenizer_dir, opt.eot));
  Corpus corpus = load_corpus(opt.inputs, opt.corpus);
  const int64_t ndocs = static_cast<int64_t>(corpus.docs.size());
  // One document (one big text file, the commonest first corpus): its last val_fraction of tokens
  // is the validation split, as nanoGPT and llm.c hold out the end of the text.
  const bool tail_split = opt.val_fraction > 0 && ndocs == 1;
  const std::vector<bool> is_val = choose_val_docs(ndocs, opt.val_fraction, opt.seed);
  Manifest man = describe(opt, model, corpus, eot, tail_split);

  AtomicDir out(opt.out, opt.overwrite);
  SplitWriter train{out.dir(), "train", man.bytes_per_token, opt.shard_tokens, {}, nullptr};
  SplitWriter val{out.dir(), "val", man.bytes_per_token, opt.shard_tokens, {}, nullptr};
  const std::string tail_note =
      encode_corpus(opt, model, corpus, static_cast<uint32_t>(eot), is_val, tail_split, train, val);
  if (!tail_note.empty()) std::fprintf(stderr, "%s\n", tail_note.c_str());
  train.close();
  val.close();
  man.train = train.info;
  man.val = val.info;
  write_manifest(out.dir(), man);
  out.commit();
  return man;
}

}  // namespace slm::data
