// embed/retrieval_eval.cpp: see retrieval_eval.h. Vector ranks are exact (all query x target
// scores); BM25 ranks come from an in-memory index of the targets.
#include "embed/retrieval_eval.h"

#include <torch/torch.h>

#include <fmt/format.h>

#include "embed/search.h"
#include "embed/store.h"
#include "tokenizer/encoder.h"
#include "util/error.h"

namespace slm::embed {
namespace {

constexpr int64_t kDepth = 50;  // list length fused by hybrid

// Accumulates ranks (1-based; 0 = not found) into the three measures.
struct Tally {
  double r1 = 0, r10 = 0, mrr = 0;
  int64_t n = 0;
  void add(int64_t rank) {
    ++n;
    if (rank < 1) return;
    r1 += rank == 1;
    r10 += rank <= 10;
    if (rank <= 10) mrr += 1.0 / static_cast<double>(rank);
  }
  RetrievalScore score(const std::string& method) const {
    return {method, r1 / static_cast<double>(n), r10 / static_cast<double>(n), mrr / static_cast<double>(n)};
  }
};

int64_t rank_in(const std::vector<Hit>& hits, int64_t id) {
  for (size_t r = 0; r < hits.size(); ++r)
    if (hits[r].id == id) return static_cast<int64_t>(r) + 1;
  return 0;
}

std::vector<Hit> top_hits(const at::Tensor& row, int64_t k) {
  auto [vals, idx] = row.topk(std::min<int64_t>(k, row.size(0)));
  std::vector<Hit> out;
  for (int64_t i = 0; i < idx.size(0); ++i) out.push_back({idx[i].item<int64_t>(), vals[i].item<double>()});
  return out;
}

}  // namespace

RetrievalTask make_retrieval_task(const data::Corpus& corpus, const std::vector<bool>& use,
                                  const train::ModelTokenizer& tok, int64_t query_tokens, int64_t target_tokens,
                                  int64_t max_docs) {
  // (at most 2^30: query_tokens + 16 below would overflow near 2^63)
  if (query_tokens < 1 || target_tokens < 1 || query_tokens > (1 << 30) || target_tokens > (1 << 30))
    throw UserError("embed eval: --query-tokens and --target-tokens must be from 1 to 1073741824");
  RetrievalTask t{{}, {}, query_tokens, target_tokens};
  tokenizer::Encoder enc(tok.tok);
  for (size_t d = 0; d < corpus.docs.size() && static_cast<int64_t>(t.queries.size()) < max_docs; ++d) {
    if (!use[d]) continue;
    std::vector<uint32_t> ids;
    enc.encode(corpus.docs[d], ids);
    if (static_cast<int64_t>(ids.size()) < query_tokens + 16) continue;
    const size_t q = static_cast<size_t>(query_tokens);
    const size_t end = std::min(ids.size(), q + static_cast<size_t>(target_tokens));
    t.queries.push_back(tokenizer::decode(tok.tok, ids.data(), q));
    t.targets.push_back(tokenizer::decode(tok.tok, ids.data() + q, end - q));
  }
  if (t.queries.size() < 2)
    throw UserError(fmt::format("embed eval: {} document(s) with at least {} tokens among those chosen; need 2 or more "
                                "(lower --query-tokens, or --all-docs)", t.queries.size(), query_tokens + 16));
  return t;
}

std::vector<RetrievalScore> evaluate_retrieval(const EmbedModel& m, const RetrievalTask& task,
                                               const std::vector<Pooling>& poolings, const std::string& precision) {
  const int64_t n = static_cast<int64_t>(task.queries.size());
  const int64_t window = m.model.cfg.block_size;
  std::vector<RetrievalScore> out;
  std::vector<std::vector<Hit>> first_vector_lists;
  for (Pooling p : poolings) {
    const EmbedOptions opt{p, 16384, m.device, precision, true};
    const at::Tensor q = embed_texts(m, task.queries, window, opt), t = embed_texts(m, task.targets, window, opt);
    const at::Tensor scores = q.mm(t.t());  // (n, n)
    const at::Tensor truth = scores.diagonal().unsqueeze(1);
    const at::Tensor ranks = (scores > truth).sum(1) + 1;
    Tally tally;
    for (int64_t i = 0; i < n; ++i) tally.add(ranks[i].item<int64_t>());
    out.push_back(tally.score("vector, " + pooling_name(p) + " pooling"));
    if (first_vector_lists.empty())
      for (int64_t i = 0; i < n; ++i) first_vector_lists.push_back(top_hits(scores[i], kDepth));
  }
  Store bm25 = Store::create(":memory:");
  std::vector<Entry> entries;
  for (int64_t i = 0; i < n; ++i) entries.push_back({i, i, "", 0, 0, task.targets[static_cast<size_t>(i)]});
  bm25.add(entries);
  Tally lexical, hybrid;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Hit> words;
    for (const auto& [id, s] : bm25.lexical(task.queries[static_cast<size_t>(i)], kDepth)) words.push_back({id, s});
    lexical.add(rank_in(words, i));
    if (!first_vector_lists.empty()) hybrid.add(rank_in(fuse_rrf({first_vector_lists[static_cast<size_t>(i)], words}, 10), i));
  }
  out.push_back(lexical.score("BM25 (SQLite FTS5)"));
  if (!first_vector_lists.empty()) out.push_back(hybrid.score("hybrid (" + pooling_name(poolings[0]) + " + BM25, RRF)"));
  double mrr = 0;  // chance: the target's rank is uniform over 1..n
  for (int64_t r = 1; r <= std::min<int64_t>(10, n); ++r) mrr += 1.0 / static_cast<double>(r);
  out.push_back({"random (expected)", 1.0 / static_cast<double>(n), std::min(1.0, 10.0 / static_cast<double>(n)),
                 mrr / static_cast<double>(n)});
  return out;
}

}  // namespace slm::embed
