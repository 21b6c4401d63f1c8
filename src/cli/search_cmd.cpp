// cli/search_cmd.cpp: `slm search INDEX "query"` (or --queries FILE): ranked entries by vector,
// words (BM25) or both (hybrid), as text or JSON lines, with per-query latency for query files.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/checks.h"
#include "cli/commands.h"
#include "embed/embed_model.h"
#include "embed/search.h"
#include "util/error.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/utf8.h"

namespace slm::cli {
namespace {

struct SearchArgs {
  std::string index, query, queries, mode = "hybrid", device = "auto";
  int64_t k = 10, effort = 0;
  bool json = false;
};

// One query per line, or a JSON lines file with a "query" (or "text") field per line.
std::vector<std::string> read_queries(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(read_file(path));
  const bool jsonl = path.size() > 6 && path.substr(path.size() - 6) == ".jsonl";
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!jsonl) {
      out.push_back(line);
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const char* key = j.is_object() && j.contains("query") ? "query" : "text";
    if (!j.is_object() || !j.contains(key) || !j[key].is_string())
      throw UserError(fmt::format("{}:{}: not a JSON object with a \"query\" string", path, n));
    out.push_back(j[key].get<std::string>());
  }
  if (out.empty()) throw UserError(fmt::format("{}: no queries", path));
  return out;
}

// One line of at most `width` bytes of text, cut on a character boundary, invalid UTF-8 shown as U+FFFD.
std::string snippet(const std::string& text, size_t width) {
  std::string s;
  for (char c : utf8_repair(text)) {
    const bool space = c == '\n' || c == '\t' || c == '\r' || c == ' ';
    if (space && (s.empty() || s.back() == ' ')) continue;
    s += space ? ' ' : c;
  }
  if (s.size() > width) s = std::string(utf8_prefix(s, width)) + "...";
  return s;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::min<double>(static_cast<double>(v.size()) - 1, p * static_cast<double>(v.size())))];
}

void run_search(const SearchArgs& a) {
  if (a.query.empty() == a.queries.empty()) throw UserError("search: give one query, or --queries FILE");
  if (a.k < 1) throw UserError(fmt::format("search: -k {} must be >= 1", a.k));
  const embed::SearchMode mode = embed::parse_mode(a.mode);
  const std::vector<std::string> queries = a.queries.empty() ? std::vector<std::string>{a.query} : read_queries(a.queries);
  for (const std::string& q : queries)
    if (embed::fts_query(q).empty() && q.find_first_not_of(" \t\r\n") == std::string::npos)
      throw UserError("search: empty query");
  const embed::OpenIndex ix = embed::open_index(a.index);
  std::unique_ptr<embed::EmbedModel> model;
  if (mode != embed::SearchMode::kLexical) {
    const std::string& src = ix.meta.at("model_source");
    model = std::make_unique<embed::EmbedModel>(embed::load_embed_model(src, a.device));
    if (model->identity != ix.meta.at("model_identity"))
      throw UserError(fmt::format("{}: {} is no longer the model the index was built with (its weights changed); "
                                  "embed again", a.index, src));
  }
  const int64_t window = std::stoll(ix.meta.at("window"));
  const embed::EmbedOptions opt{embed::parse_pooling(ix.meta.at("pooling")), 16384, model ? model->device : "cpu",
                                "fp32", true};
  std::vector<double> latency;
  if (model && queries.size() > 1) embed::embed_texts(*model, {queries.front()}, window, opt);  // warm-up, untimed
  for (const std::string& q : queries) {
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor vec;
    if (model) vec = embed::embed_texts(*model, {q}, window, opt);
    const std::vector<embed::Hit> hits =
        embed::search_index(ix, mode, q, model ? vec.data_ptr<float>() : nullptr, a.k, a.effort);
    std::vector<int64_t> ids;
    for (const embed::Hit& h : hits) ids.push_back(h.id);
    const std::vector<embed::Entry> rows = ix.store.get(ids);
    latency.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (interrupted()) {  // Ctrl-C or SIGTERM: stop between queries, as every command does
      std::fprintf(stderr, "slm: search: stopped by signal %d\n", interrupt_signal());
      throw CLI::RuntimeError(128 + interrupt_signal());
    }
    if (a.json) {
      nlohmann::json res = nlohmann::json::array();
      for (size_t i = 0; i < rows.size(); ++i)
        res.push_back({{"rank", i + 1}, {"id", rows[i].id}, {"score", hits[i].score}, {"doc", rows[i].doc},
                       {"source", rows[i].source}, {"begin", rows[i].begin}, {"end", rows[i].end}, {"text", rows[i].text}});
      // Text from the user's files may hold invalid UTF-8: written as U+FFFD rather than refused.
      const nlohmann::json line = {{"query", q}, {"mode", a.mode}, {"results", res}};
      std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      continue;
    }
    std::printf("query: %s  (%s, %zu result(s))\n", snippet(q, 80).c_str(), a.mode.c_str(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("%3zu. %8.4f  %s [%lld, %lld)  %s\n", i + 1, hits[i].score, rows[i].source.c_str(),
                  static_cast<long long>(rows[i].begin), static_cast<long long>(rows[i].end),
                  snippet(rows[i].text, 100).c_str());
  }
  if (queries.size() > 1) {
    double total = 0;
    for (double s : latency) total += s;
    std::fprintf(stderr, "search: %zu queries, %s mode, %lld entries (%s): latency p50 %.2f ms, p99 %.2f ms, %.1f queries/s\n",
                 queries.size(), a.mode.c_str(), static_cast<long long>(ix.vectors.size()), ix.meta.at("index").c_str(),
                 1e3 * percentile(latency, 0.5), 1e3 * percentile(latency, 0.99), static_cast<double>(queries.size()) / total);
  }
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand("search", "query an index folder made by `slm embed`");
  cmd->add_option("index", a->index, "index folder")->required();
  cmd->add_option("query", a->query, "the text to search for");
  cmd->add_option("--queries", a->queries, "a file of queries: one per line, or JSON lines with a \"query\" field");
  cmd->add_option("-k", a->k, "results per query")->capture_default_str()->check(at_least(1));
  cmd->add_option("--mode", a->mode, "vector, lexical (BM25) or hybrid (both, reciprocal-rank fusion)")->capture_default_str();
  cmd->add_option("--effort", a->effort, "hnsw: efSearch; ivf: clusters probed (0 = default)")->capture_default_str()->check(at_least(0));
  cmd->add_option("--device", a->device, "where the query is embedded: auto, cpu or cuda")->capture_default_str();
  cmd->add_flag("--json", a->json, "one JSON object per query (rank, id, score, doc, source, byte range, text)");
  cmd->callback([a] { run_search(*a); });
}

}  // namespace slm::cli
