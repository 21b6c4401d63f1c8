// data/corpus.h: a user's raw text, as a list of documents.
// Owns: CorpusOptions (how files become documents), expand_inputs (files, directories, globs),
// and load_corpus. Text files are memory-mapped and documents are views into them; .jsonl
// documents are decoded into owned strings. Used by tokenizer training and dataset preparation.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/files.h"

namespace slm::data {

struct CorpusOptions {
  std::string format = "auto";       // auto (.jsonl/.json -> jsonl, else text) | text | jsonl
  std::string separator;             // text: "" one document per file, "blank" blank lines,
                                     // "line" one per line, else a literal (\n \t \r \\ escapes)
  std::string jsonl_field = "text";  // jsonl: the string field that holds a document
};

struct Source {
  std::string path;
  int64_t bytes = 0;
  int64_t documents = 0;
};

struct Corpus {
  std::vector<Source> sources;
  std::vector<std::string_view> docs;  // non-empty documents, in source order
  int64_t bytes = 0;                   // sum of document sizes
  std::vector<std::unique_ptr<MappedFile>> maps;  // storage behind text documents
  std::deque<std::string> owned;                  // storage behind jsonl documents
};

// Paths of the files named by `inputs`: files as given, directories recursively (sorted,
// hidden and binary files skipped), glob patterns expanded. Duplicates (same real path, e.g.
// symlinks) are dropped. Throws UserError for a missing path or a pattern with no match. The
// binary files skipped in directories are appended to *skipped when it is given.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs,
                                       std::vector<std::string>* skipped = nullptr);

// Throws UserError on unreadable files, bad JSON lines, a bad option, or an empty corpus.
Corpus load_corpus(const std::vector<std::string>& inputs, const CorpusOptions& opt);

// "\n%\n" -> newline, '%', newline. Exposed for tests.
std::string unescape(const std::string& s);

}  // namespace slm::data
