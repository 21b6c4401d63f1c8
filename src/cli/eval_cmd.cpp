// cli/eval_cmd.cpp: `slm eval` (loss and perplexity of a checkpoint on a prepared split or on a
// raw text file) and `slm generate` (sampling from a checkpoint); both also take a Hugging Face
// GPT-2 folder (model/hf_import.h).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "cli/commands.h"
#include "data/manifest.h"
#include "data/mix.h"
#include "data/shard.h"
#include "model/generate.h"
#include "model/hf_import.h"
#include "tokenizer/encoder.h"
#include "tokenizer/hf_files.h"
#include "train/checkpoint.h"
#include "train/model_tokenizer.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::cli {
namespace {

train::LossFn loss_of(const model::GPT2& m) {
  return [&m](const at::Tensor& x, const at::Tensor& y) { return model::forward_loss(m, x, y, false); };
}

struct EvalArgs {
  std::string source, data, split = "val", text, tokenizer;
  int64_t batches = 50, micro = 8;
};

void run_eval(const EvalArgs& a) {
  if (a.batches < 1) throw UserError(fmt::format("eval: --batches {} must be at least 1", a.batches));
  if (a.micro < 1) throw UserError(fmt::format("eval: --micro-batch {} must be at least 1", a.micro));
  train::Config cfg;
  model::GPT2 m = train::load_model(a.source, &cfg);
  const int64_t T = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  const auto say = [](const std::string& what, double loss) {
    std::printf("eval %s: loss %.4f, perplexity %.2f\n", what.c_str(), loss, std::exp(loss));
  };
  if (!a.text.empty()) {  // raw text: tokenize, one shard in a temporary directory, sequential windows
    const train::ModelTokenizer st = train::model_tokenizer(a.source, cfg, a.tokenizer);
    const tokenizer::BpeModel& tok = st.tok;
    tokenizer::Encoder enc(tok);
    std::vector<uint32_t> ids{static_cast<uint32_t>(st.eot_id)};
    enc.encode(read_file(a.text), ids);
    AtomicDir tmp(fmt::format("/tmp/slm_eval_{}", ::getpid()), true);
    data::ShardWriter w(tmp.dir() + "/text.bin", data::bytes_per_token_for(tok.vocab_size()));
    w.append(ids.data(), ids.size());
    w.commit();
    std::vector<data::Shard> shards;
    shards.emplace_back(tmp.dir() + "/text.bin");
    data::Loader loader(shards, {T, 0, false});
    say(fmt::format("{} ({} tokens)", a.text, ids.size()),
        train::mean_loss(loss_of(m), loader, a.micro, a.batches, "fp32", "cpu"));
    return;
  }
  if (a.data.empty() && cfg.data.dir.empty())
    throw UserError(fmt::format("{}: an imported model has no dataset; pass --data or --text", a.source));
  std::vector<std::string> dirs{a.data.empty() ? cfg.data.dir : a.data};
  if (a.data.empty())  // the run's own data: its mixed datasets (data.mix) each on a line too
    for (const data::MixEntry& e : data::parse_mix(cfg.data.mix)) dirs.push_back(e.dir);
  const std::string identity = train::model_tokenizer(a.source, cfg, a.tokenizer).identity;
  for (const std::string& dir : dirs) {
    data::Dataset d = data::open_dataset(dir, identity);
    data::Loader loader(a.split == "train" ? d.train : d.val, {T, 0, false});
    say(fmt::format("{} split of {}", a.split, d.dir),
        train::mean_loss(loss_of(m), loader, a.micro, a.batches, "fp32", "cpu"));
  }
}

struct GenerateArgs {
  std::string source, prompt, tokenizer;
  model::SampleOptions o;
};

void run_generate(const GenerateArgs& a) {
  model::validate(a.o);  // before loading anything
  train::Config cfg;
  model::GPT2 m = train::load_model(a.source, &cfg);
  const train::ModelTokenizer st = train::model_tokenizer(a.source, cfg, a.tokenizer);
  const tokenizer::BpeModel& tok = st.tok;
  tokenizer::Encoder enc(tok);
  std::vector<uint32_t> ids{static_cast<uint32_t>(st.eot_id)};  // documents start with it
  enc.encode(a.prompt, ids);
  model::SampleOptions o = a.o;
  o.stop_token = st.eot_id;
  std::vector<int64_t> out = model::generate(m, std::vector<int64_t>(ids.begin(), ids.end()), o);
  if (!out.empty() && out.back() == st.eot_id) out.pop_back();
  std::vector<uint32_t> text(out.begin(), out.end());
  std::string s = a.prompt + tokenizer::decode(tok, text);
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::printf("\n");
}

}  // namespace

void add_eval_commands(CLI::App& app) {
  auto e = std::make_shared<EvalArgs>();
  auto* ev = app.add_subcommand("eval", "loss and perplexity of a checkpoint on a dataset split or a text file");
  ev->add_option("source", e->source, "run directory (newest valid checkpoint), checkpoint directory or Hugging Face GPT-2 folder")->required();
  ev->add_option("--data", e->data,
                 "prepared dataset (default: the one the model was trained on, and each of its data.mix datasets)");
  ev->add_option("--split", e->split, "split of the dataset")->capture_default_str()->check(CLI::IsMember({"val", "train"}));
  ev->add_option("--text", e->text, "evaluate on this raw text file instead (tokenized with the model's tokenizer)");
  ev->add_option("-t,--tokenizer", e->tokenizer, "tokenizer directory (default: from the dataset's manifest)");
  ev->add_option("--batches", e->batches, "at most this many batches")->capture_default_str();
  ev->add_option("--micro-batch", e->micro, "sequences per batch")->capture_default_str();
  ev->callback([e] { run_eval(*e); });

  auto g = std::make_shared<GenerateArgs>();
  auto* gen = app.add_subcommand("generate", "sample text from a checkpoint");
  gen->add_option("source", g->source, "run directory (newest valid checkpoint), checkpoint directory or Hugging Face GPT-2 folder")->required();
  gen->add_option("-p,--prompt", g->prompt, "text to continue (empty: start a new document)");
  gen->add_option("-n,--max-tokens", g->o.max_new_tokens, "tokens to sample at most")->capture_default_str();
  gen->add_option("--temperature", g->o.temperature, "softmax temperature; 0 = greedy")->capture_default_str();
  gen->add_option("--top-k", g->o.top_k, "sample among the k most likely tokens (0 = all)")->capture_default_str();
  gen->add_option("--top-p", g->o.top_p, "nucleus sampling: smallest set with this probability")->capture_default_str();
  gen->add_option("--seed", g->o.seed, "sampling seed")->capture_default_str();
  gen->add_option("-t,--tokenizer", g->tokenizer, "tokenizer directory (default: from the dataset's manifest)");
  gen->callback([g] { run_generate(*g); });
}

}  // namespace slm::cli
