// cli/embed_cmd.cpp: `slm embed` (text -> an index folder: vectors, entries, full-text table) and
// `slm embed eval` (retrieval quality on held-out documents: the model's poolings against BM25,
// hybrid and chance).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/checks.h"
#include "cli/commands.h"
#include "data/prepare.h"
#include "embed/embed_model.h"
#include "embed/index.h"
#include "embed/retrieval_eval.h"
#include "tokenizer/encoder.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::cli {
namespace {

struct EmbedArgs {
  std::string source, out, append, device = "auto", precision = "fp32", pooling = "mean";
  std::vector<std::string> inputs;
  data::CorpusOptions corpus;
  embed::VectorIndexSpec spec;
  int64_t window = 0, stride = 0, batch_tokens = 16384;
  bool force = false, quiet = false;
};

// Window and stride: the model's context and no overlap unless given; checked against the model.
std::pair<int64_t, int64_t> window_of(int64_t window, int64_t stride, const model::GPT2Config& c) {
  const int64_t w = window > 0 ? window : c.block_size;
  if (w < 2 || w > c.block_size)
    throw UserError(fmt::format("--window {} must be in [2, the model's context {}]", w, c.block_size));
  const int64_t s = stride > 0 ? stride : w - 1;
  if (s > w - 1) throw UserError(fmt::format("--stride {} must be at most --window - 1 = {}", s, w - 1));
  return {w, s};
}

void run_embed(const EmbedArgs& a) {
  if (a.out.empty() == a.append.empty()) throw UserError("embed: give --out DIR (a new index) or --append DIR");
  if (!a.out.empty()) check_output_dir(a.out, a.force);
  if (a.inputs.empty()) throw UserError("embed: no inputs (files, directories or globs of text)");
  embed::validate(a.spec);
  const embed::Pooling pooling = embed::parse_pooling(a.pooling);
  const data::Corpus corpus = data::load_corpus(a.inputs, a.corpus);
  const embed::EmbedModel m = embed::load_embed_model(a.source, a.device);
  const auto [window, stride] = window_of(a.window, a.stride, m.model.cfg);

  embed::NewEntries batch;
  batch.dim = m.model.cfg.n_embd;
  std::vector<embed::Window> windows;
  tokenizer::Encoder enc(m.tok.tok);
  size_t source = 0;
  int64_t left_in_source = corpus.sources.empty() ? 0 : corpus.sources[0].documents, tokens = 0;
  for (size_t d = 0; d < corpus.docs.size(); ++d) {
    while (left_in_source == 0) left_in_source = corpus.sources[++source].documents;
    --left_in_source;
    for (embed::Window& w : embed::cut_windows(m.tok.tok, enc, corpus.docs[d], static_cast<int64_t>(d), window, stride,
                                               m.tok.eot_id)) {
      const auto [begin, end] = embed::whole_characters(corpus.docs[d], w.begin, w.end);
      batch.entries.push_back({0, w.doc, corpus.sources[source].path, begin, end,
                               std::string(corpus.docs[d].substr(static_cast<size_t>(begin),
                                                                 static_cast<size_t>(end - begin)))});
      tokens += static_cast<int64_t>(w.ids.size());
      windows.push_back(std::move(w));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const at::Tensor v = embed::embed_windows(m.model, windows, {pooling, a.batch_tokens, m.device, a.precision, a.quiet});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  batch.vectors.assign(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());

  const embed::Meta meta = {{"model_identity", m.identity}, {"model_source", m.source},
                            {"tokenizer_identity", m.tok.identity}, {"pooling", embed::pooling_name(pooling)},
                            {"window", std::to_string(window)}, {"stride", std::to_string(stride)},
                            {"dim", std::to_string(batch.dim)}};
  const int64_t n = static_cast<int64_t>(windows.size());
  std::string where;
  if (!a.append.empty()) {
    const int64_t before = embed::append_index(a.append, meta, std::move(batch));
    where = fmt::format("{} ({} + {} entries)", a.append, before, n);
  } else {
    embed::create_index(a.out, meta, a.spec, std::move(batch), a.force);
    where = fmt::format("{} ({} {})", a.out, a.spec.kind, a.spec.dtype);
  }
  std::printf("embed: %lld windows of %zu documents (%lld tokens), dim %lld, %s pooling, %s %s: %.1f windows/s, "
              "%.0f tokens/s -> %s\n",
              static_cast<long long>(n), corpus.docs.size(), static_cast<long long>(tokens),
              static_cast<long long>(m.model.cfg.n_embd), embed::pooling_name(pooling).c_str(), m.device.c_str(),
              a.precision.c_str(), n / secs, tokens / secs, where.c_str());
}

struct EvalArgs {
  std::string source, device = "auto", precision = "fp32", pooling = "all";
  std::vector<std::string> inputs;
  data::CorpusOptions corpus;
  double val_fraction = 0.05;
  uint64_t seed = 1337;
  int64_t query_tokens = 32, target_tokens = 0, max_docs = 2000;
  bool all_docs = false, json = false;
};

void run_eval(const EvalArgs& a) {
  const data::Corpus corpus = data::load_corpus(a.inputs, a.corpus);
  const embed::EmbedModel m = embed::load_embed_model(a.source, a.device);
  embed::RetrievalTask task = embed::make_retrieval_task(
      corpus, a.all_docs ? std::vector<bool>(corpus.docs.size(), true)
                         : data::choose_val_docs(static_cast<int64_t>(corpus.docs.size()), a.val_fraction, a.seed),
      m.tok, a.query_tokens, a.target_tokens > 0 ? a.target_tokens : m.model.cfg.block_size - 1, a.max_docs);
  std::vector<embed::Pooling> poolings;
  if (a.pooling == "all") poolings = {embed::Pooling::kMean, embed::Pooling::kLast, embed::Pooling::kWeightedMean};
  else poolings = {embed::parse_pooling(a.pooling)};
  const std::vector<embed::RetrievalScore> rows = embed::evaluate_retrieval(m, task, poolings, a.precision);
  if (a.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows)
      j.push_back({{"method", r.method}, {"recall_at_1", r.recall1}, {"recall_at_10", r.recall10}, {"mrr_at_10", r.mrr10},
                   {"queries", task.queries.size()}});
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("retrieval on %zu held-out documents of %s: query = the first %lld tokens, target = the next %lld\n",
              task.queries.size(), a.inputs.front().c_str(), static_cast<long long>(task.query_tokens),
              static_cast<long long>(task.target_tokens));
  std::printf("%-28s %9s %10s %8s\n", "method", "recall@1", "recall@10", "MRR@10");
  for (const auto& r : rows)
    std::printf("%-28s %9.3f %10.3f %8.3f\n", r.method.c_str(), r.recall1, r.recall10, r.mrr10);
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto a = std::make_shared<EmbedArgs>();
  auto* cmd = app.add_subcommand("embed", "embed text with a trained model into a searchable index folder");
  cmd->add_option("source", a->source, "run directory, checkpoint directory or Hugging Face GPT-2 folder");
  cmd->add_option("inputs", a->inputs, "text to embed: files, directories, globs (as `slm data prepare` reads)");
  cmd->add_option("-o,--out", a->out, "new index folder");
  cmd->add_option("--append", a->append, "add the documents to this existing index instead");
  cmd->add_flag("--force", a->force, "replace an existing --out folder");
  add_corpus_options(cmd, a->corpus);
  cmd->add_option("--window", a->window, "tokens per entry, the leading end-of-text included (default: the model's context)")->check(at_least(0));
  cmd->add_option("--stride", a->stride, "text tokens between window starts (default: window - 1, no overlap)")->check(at_least(0));
  cmd->add_option("--pooling", a->pooling, "mean, last or weighted-mean over the final hidden states")
      ->capture_default_str();
  cmd->add_option("--index", a->spec.kind, "vector index: flat (exact), hnsw (graph) or ivf (clusters)")->capture_default_str();
  cmd->add_option("--dtype", a->spec.dtype, "stored vectors: fp32 or fp16")->capture_default_str();
  cmd->add_option("--hnsw-m", a->spec.hnsw_m, "hnsw: links per node")->capture_default_str()->check(in_range(2, 256));
  cmd->add_option("--ivf-lists", a->spec.ivf_lists, "ivf: clusters (0 = about 4 sqrt(entries))")->capture_default_str()->check(at_least(0));
  cmd->add_option("--device", a->device, "auto, cpu or cuda")->capture_default_str();
  cmd->add_option("--precision", a->precision, "fp32, bf16 or fp16 (autocast)")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->add_option("--batch-tokens", a->batch_tokens, "padded tokens per forward pass")->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_flag("-q,--quiet", a->quiet, "no progress line");

  auto e = std::make_shared<EvalArgs>();
  auto* ev = cmd->add_subcommand("eval", "retrieval quality on held-out documents: recall@1/@10, MRR@10");
  ev->add_option("source", e->source, "run directory, checkpoint directory or Hugging Face GPT-2 folder")->required();
  ev->add_option("inputs", e->inputs, "the corpus (as `slm data prepare` reads it)")->required();
  add_corpus_options(ev, e->corpus);
  ev->add_option("--val-fraction", e->val_fraction, "held-out share, chosen as `slm data prepare` does")->capture_default_str()->check(in_range(0, 0.5));
  ev->add_option("--seed", e->seed, "seed of that choice (as `slm data prepare --seed`)")->capture_default_str();
  ev->add_flag("--all-docs", e->all_docs, "use every document, not the held-out ones");
  ev->add_option("--query-tokens", e->query_tokens, "tokens of a document's start that form its query")
      ->capture_default_str()
      ->check(in_range(1, 1 << 30));
  ev->add_option("--target-tokens", e->target_tokens, "tokens after them that form its target (default: context - 1)")
      ->check(in_range(0, 1 << 30));
  ev->add_option("--max-docs", e->max_docs, "at most this many documents (the first ones)")->capture_default_str()->check(at_least(0));
  ev->add_option("--pooling", e->pooling, "mean, last, weighted-mean or all")->capture_default_str();
  ev->add_option("--device", e->device, "auto, cpu or cuda")->capture_default_str();
  ev->add_option("--precision", e->precision, "fp32, bf16 or fp16 (autocast)")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  ev->add_flag("--json", e->json, "one JSON array of the rows");
  ev->callback([e] { run_eval(*e); });
  add_embed_tune_command(*cmd);

  cmd->callback([a, cmd, ev] {
    if (cmd->got_subcommand(ev) || cmd->got_subcommand("tune")) return;
    if (a->source.empty()) throw UserError("embed: give a model (run, checkpoint or export folder) and inputs");
    if (!a->append.empty())  // an index keeps the kind it was made with
      for (const char* o : {"--index", "--dtype", "--hnsw-m", "--ivf-lists"})
        if (cmd->count(o) > 0)
          throw UserError(fmt::format("embed: {} chooses a new index's kind (--out); --append {} keeps the kind it "
                                      "was made with", o, a->append));
    run_embed(*a);
  });
}

}  // namespace slm::cli
