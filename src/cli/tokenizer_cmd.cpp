// cli/tokenizer_cmd.cpp: `slm tokenizer train|encode|decode|info`.
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "cli/checks.h"
#include "cli/commands.h"
#include "data/shard.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/encoder.h"
#include "tokenizer/hf_files.h"
#include "util/error.h"
#include "util/files.h"
#include "util/progress.h"
#include "util/threads.h"

namespace slm::cli {
namespace {

struct TrainArgs {
  std::vector<std::string> inputs;
  data::CorpusOptions corpus;
  tokenizer::TrainOptions train;
  std::string out = "tokenizer";
  int threads = 0;
  bool force = false, quiet = false;
};

void run_train(const TrainArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  tokenizer::validate(a.train);
  check_output_dir(a.out, a.force);
  data::Corpus corpus = data::load_corpus(a.inputs, a.corpus);
  const int threads = a.threads > 0 ? a.threads : default_threads();
  tokenizer::WordCounts counts;
  {
    Progress p("count words", corpus.bytes, "B", a.quiet);
    counts = tokenizer::count_words(corpus.docs, threads, [&](int64_t n) { p.add(n); });
    p.finish();
  }
  tokenizer::BpeModel m;
  {
    int specials = static_cast<int>(a.train.specials.size());
    Progress p("merges", a.train.vocab_size - 256 - specials, "merges", a.quiet);
    m = tokenizer::train_bpe(counts, a.train, [&](int n) { p.set(n); });
    p.finish();
  }
  tokenizer::save_tokenizer(m, a.out, a.force);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("tokenizer: %d tokens (%zu merges, %zu special) from %.1f MB in %zu file(s), %zu "
              "distinct words, %.1f s -> %s\n",
              m.vocab_size(), m.merges.size(), m.special_to_id.size(), corpus.bytes / 1e6,
              corpus.sources.size(), counts.size(), s, a.out.c_str());
  if (m.vocab_size() < a.train.vocab_size)
    std::fprintf(stderr, "note: asked for %d tokens; no further pair occurs %lld+ times\n",
                 a.train.vocab_size, static_cast<long long>(a.train.min_frequency));
}

std::string read_input(const std::string& path) {
  if (path != "-") return read_file(path);
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

struct CodecArgs {
  std::string tokenizer, input = "-", shard, text;
  bool allow_special = false, binary = false;
  int64_t start = 0, count = -1;
};

void run_encode(const CodecArgs& a) {
  tokenizer::BpeModel m = tokenizer::load_tokenizer(a.tokenizer);
  tokenizer::Encoder enc(m);
  std::string text = read_input(a.input);
  std::vector<uint32_t> ids;
  if (a.allow_special) enc.encode_with_specials(text, ids);
  else enc.encode(text, ids);
  if (a.binary) {
    std::fwrite(ids.data(), sizeof(uint32_t), ids.size(), stdout);
    return;
  }
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  std::printf("%s\n", out.c_str());
}

void run_decode(const CodecArgs& a) {
  tokenizer::BpeModel m = tokenizer::load_tokenizer(a.tokenizer);
  std::vector<uint32_t> ids;
  if (!a.shard.empty()) {
    data::Shard s(a.shard);
    // Counted from what is left after start, so that no start + count overflows (2^63 - 1).
    const int64_t from = std::min(std::max<int64_t>(0, a.start), s.size());
    const int64_t end = a.count < 0 ? s.size() : from + std::min(a.count, s.size() - from);
    for (int64_t i = from; i < end; ++i) ids.push_back(s[i]);
  } else {
    std::istringstream in(read_input(a.input));
    std::string w;
    while (in >> w) {
      char* end = nullptr;
      unsigned long long v = std::strtoull(w.c_str(), &end, 10);
      if (*end != '\0' || w[0] == '-' || v > UINT32_MAX)
        throw UserError(fmt::format("{}: \"{}\" is not a token id", a.input, w));
      ids.push_back(static_cast<uint32_t>(v));
    }
  }
  std::string bytes = tokenizer::decode(m, ids);
  std::fwrite(bytes.data(), 1, bytes.size(), stdout);
}

// Token bytes for display: printable ASCII as is, everything else as \xNN.
std::string printable(const std::string& bytes) {
  std::string out = "'";
  for (unsigned char c : bytes)
    out += (c >= 0x20 && c < 0x7f && c != '\\') ? std::string(1, static_cast<char>(c))
                                                  : fmt::format("\\x{:02x}", c);
  return out + "'";
}

void run_info(const CodecArgs& a) {
  tokenizer::BpeModel m = tokenizer::load_tokenizer(a.tokenizer);
  std::printf("tokenizer   %s\nvocab size  %d\nmerges      %zu\nidentity    %s\n",
              a.tokenizer.c_str(), m.vocab_size(), m.merges.size(), model_identity(m).c_str());
  for (const auto& [text, id] : m.special_to_id) std::printf("special     %d %s\n", id, text.c_str());
  if (a.text.empty()) return;
  tokenizer::Encoder enc(m);
  std::vector<uint32_t> ids;
  enc.encode(a.text, ids);
  std::printf("text        %zu bytes -> %zu tokens\n", a.text.size(), ids.size());
  for (uint32_t id : ids) std::printf("  %6u  %s\n", id, printable(m.id_to_bytes[id]).c_str());
}

}  // namespace

void add_tokenizer_commands(CLI::App& app) {
  auto* tok = app.add_subcommand("tokenizer", "train, inspect and apply a byte-level BPE tokenizer");
  tok->require_subcommand(1);

  auto ta = std::make_shared<TrainArgs>();
  auto* train = tok->add_subcommand(
      "train", "learn a GPT-2-style byte-level BPE from text files, directories or globs; writes "
               "vocab.json + merges.txt (Hugging Face GPT2Tokenizer loads them)");
  train->add_option("inputs", ta->inputs, "text or .jsonl files, directories, glob patterns")->required();
  train->add_option("-o,--out", ta->out, "output directory")->capture_default_str();
  train->add_option("--vocab-size", ta->train.vocab_size,
                    "total tokens, special tokens included (>= 256 + specials)")
      ->capture_default_str();
  train->add_option("--min-frequency", ta->train.min_frequency,
                    "a pair seen fewer times than this is never merged")
      ->capture_default_str()->check(at_least(1));
  train->add_option("--special", ta->train.specials,
                    "special tokens, appended after the merges (repeat the option for several)")
      ->capture_default_str();
  train->add_option("--threads", ta->threads, "worker threads for word counting (0 = all cores)")
      ->check(in_range(0, kMaxThreads))
      ->capture_default_str();
  train->add_flag("--force", ta->force, "replace the output directory if it exists");
  train->add_flag("-q,--quiet", ta->quiet, "no progress output");
  add_corpus_options(train, ta->corpus);
  train->callback([ta] { run_train(*ta); });

  auto ca = std::make_shared<CodecArgs>();
  auto* encode = tok->add_subcommand("encode", "text -> token ids (space-separated on stdout)");
  encode->add_option("-t,--tokenizer", ca->tokenizer, "tokenizer directory")->required();
  encode->add_option("input", ca->input, "text file, or - for stdin")->capture_default_str();
  encode->add_flag("--allow-special", ca->allow_special,
                   "text of special tokens (e.g. <|endoftext|>) becomes their id");
  encode->add_flag("--binary", ca->binary, "write ids as little-endian uint32 instead of text");
  encode->callback([ca] { run_encode(*ca); });

  auto* decode = tok->add_subcommand("decode", "token ids -> text (exact inverse of encode)");
  decode->add_option("-t,--tokenizer", ca->tokenizer, "tokenizer directory")->required();
  decode->add_option("input", ca->input, "file of whitespace-separated ids, or - for stdin")
      ->capture_default_str();
  decode->add_option("--shard", ca->shard, "decode tokens of a .bin shard instead");
  decode->add_option("--start", ca->start, "with --shard: first token")->capture_default_str()->check(at_least(0));
  decode->add_option("--count", ca->count, "with --shard: number of tokens (-1 = all)")
      ->capture_default_str()->check(at_least(-1));
  decode->callback([ca] { run_decode(*ca); });

  auto* info = tok->add_subcommand("info", "vocabulary size, merges, special tokens, identity");
  info->add_option("tokenizer", ca->tokenizer, "tokenizer directory")->required();
  info->add_option("--text", ca->text, "also show how this text is tokenized");
  info->callback([ca] { run_info(*ca); });
}

}  // namespace slm::cli
