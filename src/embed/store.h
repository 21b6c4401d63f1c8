// embed/store.h: the index's SQLite database (index.sqlite): one row per entry, an FTS5 table
// over the same text for lexical (BM25) search, and a metadata table (model, tokenizer, pooling).
// Owns: Entry, Store (the connection; every write in one transaction) and fts_query (a user's
// words -> an FTS5 query that matches any of them). Errors are UserErrors naming the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace slm::embed {

struct Entry {
  int64_t id = 0;              // = the vector's id in FAISS and its row in embeddings.npy
  int64_t doc = 0;             // document number, across every source of the index
  std::string source;          // the file the document came from
  int64_t begin = 0, end = 0;  // byte range of the document
  std::string text;
};

class Store {
 public:
  // create: a new database with the schema (the file must not exist); open: an existing one,
  // checked to be an slm index. read_only opens it so.
  static Store create(const std::string& path);
  static Store open(const std::string& path, bool read_only);
  Store(Store&& o) noexcept;
  Store& operator=(Store&&) = delete;
  Store(const Store&) = delete;
  ~Store();

  void set_meta(const std::map<std::string, std::string>& kv);
  std::map<std::string, std::string> meta() const;
  void add(const std::vector<Entry>& entries);  // entries and their text in the FTS table
  int64_t count() const;
  int64_t next_doc() const;  // 1 + the largest document number (0 when empty)
  std::vector<Entry> get(const std::vector<int64_t>& ids) const;  // in the order asked
  // The k best entries for `query` by BM25 (FTS5's bm25(), negated: higher is better); cut short
  // (what was found so far) once interrupted() (util/interrupt.h).
  std::vector<std::pair<int64_t, double>> lexical(const std::string& query, int64_t k) const;

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void exec(const std::string& sql) const;
  sqlite3* db_ = nullptr;
  std::string path_;
};

// "Don't panic!" -> "\"don\" OR \"t\" OR \"panic\"" (words: runs of letters, digits and non-ASCII
// bytes, each once, the first kMaxQueryTerms distinct ones); "" when the text has no word. The bound
// keeps a long query's BM25 search short (FTS5's time grows faster than its number of terms).
inline constexpr size_t kMaxQueryTerms = 64;
std::string fts_query(const std::string& text);

}  // namespace slm::embed
