// cli/data_cmd.cpp: `slm data prepare|info`.
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <memory>

#include "cli/checks.h"
#include "cli/commands.h"
#include "data/manifest.h"
#include "data/prepare.h"
#include "tokenizer/hf_files.h"
#include "util/error.h"
#include "util/threads.h"

namespace slm::cli {
namespace {

void print_split(const char* name, const data::SplitInfo& s) {
  std::printf("%-6s %9lld documents %12lld tokens %8.1f MB text  %zu shard(s)\n", name,
              static_cast<long long>(s.documents), static_cast<long long>(s.tokens), s.bytes / 1e6,
              s.shards.size());
}

void run_prepare(const data::PrepareOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  data::Manifest m = data::prepare_dataset(o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("dataset: %s (%zu source file(s), %d-byte tokens, %.1f s)\n", o.out.c_str(),
              m.sources.size(), m.bytes_per_token, s);
  print_split("train", m.train);
  print_split("val", m.val);
}

struct InfoArgs {
  std::string dir, tokenizer;
};

void run_info(const InfoArgs& a) {
  std::string identity;
  if (!a.tokenizer.empty()) identity = model_identity(tokenizer::load_tokenizer(a.tokenizer));
  data::Dataset d = data::open_dataset(a.dir, identity);  // validates every shard: header, checksum, ids
  const data::Manifest& m = d.manifest;
  std::printf("dataset    %s\ntokenizer  %s (identity %s, vocab %lld, %s = %lld)\n", a.dir.c_str(),
              m.tokenizer_path.c_str(), m.tokenizer_identity.substr(0, 12).c_str(),
              static_cast<long long>(m.vocab_size), m.eot_token.c_str(),
              static_cast<long long>(m.eot_id));
  std::printf("sources    %zu file(s); val fraction %.3f of the %s, seed %llu\n", m.sources.size(), m.val_fraction,
              m.val_split == "tail" ? "tokens (the end of the one document)" : "documents",
              static_cast<unsigned long long>(m.seed));
  print_split("train", m.train);
  print_split("val", m.val);
  const bool summed = !m.train.shards.empty() && !m.train.shards[0].xxh3.empty();
  std::printf("shards     all %zu valid, every token id < %lld%s\n", d.train.size() + d.val.size(),
              static_cast<long long>(m.vocab_size),
              summed ? ", checksums match" : " (no checksums: prepared by an older slm)");
}

}  // namespace

void add_data_commands(CLI::App& app) {
  auto* data_cmd = app.add_subcommand("data", "turn raw text into token shards and inspect them");
  data_cmd->require_subcommand(1);

  auto o = std::make_shared<data::PrepareOptions>();
  auto* prep = data_cmd->add_subcommand(
      "prepare", "tokenize text into train/val token shards (llm.c .bin layout) + manifest.json");
  prep->add_option("inputs", o->inputs, "text or .jsonl files, directories, glob patterns")->required();
  prep->add_option("-t,--tokenizer", o->tokenizer_dir, "tokenizer directory")->required();
  prep->add_option("-o,--out", o->out, "output dataset directory")->required();
  prep->add_option("--val-fraction", o->val_fraction,
                   "share of documents held out for validation, in [0, 0.5] (one document: the share of its "
                   "tokens at its end)")
      ->capture_default_str();
  prep->add_option("--seed", o->seed, "seed of the train/validation document split")
      ->capture_default_str();
  prep->add_option("--shard-tokens", o->shard_tokens, "tokens per shard file")->capture_default_str()->check(at_least(1));
  prep->add_option("--eot", o->eot, "special token placed before every document")
      ->capture_default_str();
  prep->add_option("--threads", o->threads, "encoding threads (0 = all cores)")
      ->capture_default_str()
      ->check(in_range(0, kMaxThreads));
  prep->add_flag("--force", o->overwrite, "replace the output directory if it exists");
  prep->add_flag("-q,--quiet", o->quiet, "no progress output");
  add_corpus_options(prep, o->corpus);
  prep->callback([o] { run_prepare(*o); });

  auto ia = std::make_shared<InfoArgs>();
  auto* info = data_cmd->add_subcommand("info", "summarize a prepared dataset and verify its shards");
  info->add_option("dir", ia->dir, "dataset directory")->required();
  info->add_option("-t,--tokenizer", ia->tokenizer,
                   "check that the dataset was prepared with this tokenizer");
  info->callback([ia] { run_info(*ia); });
}

}  // namespace slm::cli
