// embed/retrieval_eval.h: how well an embedding model finds a document from a piece of it.
// Owns: RetrievalTask (queries = the first tokens of held-out documents, targets = the tokens
// that follow), make_retrieval_task, RetrievalScore and evaluate_retrieval: recall@1, recall@10
// and MRR@10 of each pooling, of BM25 (SQLite FTS5), of hybrid (the first pooling + BM25, RRF)
// and of chance, all over the same queries and targets.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "embed/embed_model.h"
#include "embed/pooling.h"

namespace slm::embed {

struct RetrievalTask {
  std::vector<std::string> queries, targets;  // query i belongs to target i
  int64_t query_tokens = 0, target_tokens = 0;
};

// Documents d with use[d] and at least query_tokens + 16 tokens, the first max_docs of them.
// UserError when fewer than 2 qualify.
RetrievalTask make_retrieval_task(const data::Corpus& corpus, const std::vector<bool>& use,
                                  const train::ModelTokenizer& tok, int64_t query_tokens, int64_t target_tokens,
                                  int64_t max_docs);

struct RetrievalScore {
  std::string method;
  double recall1 = 0, recall10 = 0, mrr10 = 0;
};

std::vector<RetrievalScore> evaluate_retrieval(const EmbedModel& m, const RetrievalTask& task,
                                               const std::vector<Pooling>& poolings, const std::string& precision);

}  // namespace slm::embed
