// embed/store.cpp: see store.h. Uses SQLite's C API directly: a handful of prepared statements.
#include "embed/store.h"

#include <sqlite3.h>

#include <cctype>
#include <fmt/format.h>
#include <unordered_set>

#include "util/error.h"
#include "util/files.h"
#include "util/interrupt.h"

namespace slm::embed {
namespace {

constexpr const char* kSchema = R"(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entries (id INTEGER PRIMARY KEY, doc INTEGER NOT NULL, source TEXT NOT NULL,
                      begin INTEGER NOT NULL, end INTEGER NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE entries_fts USING fts5(text, content='entries', content_rowid='id');
)";

// One prepared statement, finalized on scope exit.
struct Stmt {
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw UserError(fmt::format("{}: {}", path, sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(s); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* s = nullptr;
};

std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s, i)))
           : std::string();
}

sqlite3* connect(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw UserError(fmt::format("{}: cannot open ({})", path, why));
  }
  return db;
}

}  // namespace

Store Store::create(const std::string& path) {
  if (path_exists(path)) throw UserError(fmt::format("{}: already exists", path));
  Store st(connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), path);
  st.exec(kSchema);
  return st;
}

Store Store::open(const std::string& path, bool read_only) {
  if (!path_exists(path)) throw UserError(fmt::format("{}: not found", path));
  Store st(connect(path, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE), path);
  Stmt q(st.db_, "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'entries', 'entries_fts')", path);
  if (sqlite3_step(q.s) != SQLITE_ROW || sqlite3_column_int(q.s, 0) != 3)
    throw UserError(fmt::format("{}: not an slm index database", path));
  return st;
}

Store::Store(Store&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
Store::~Store() { sqlite3_close(db_); }

void Store::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw UserError(fmt::format("{}: {}", path_, why));
  }
}

void Store::set_meta(const std::map<std::string, std::string>& kv) {
  exec("BEGIN");
  Stmt st(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", path_);
  for (const auto& [k, v] : kv) {
    sqlite3_bind_text(st.s, 1, k.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 2, v.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.s) != SQLITE_DONE) throw UserError(fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
    sqlite3_reset(st.s);
  }
  exec("COMMIT");
}

std::map<std::string, std::string> Store::meta() const {
  std::map<std::string, std::string> kv;
  Stmt st(db_, "SELECT key, value FROM meta", path_);
  while (sqlite3_step(st.s) == SQLITE_ROW) kv[column_text(st.s, 0)] = column_text(st.s, 1);
  return kv;
}

void Store::add(const std::vector<Entry>& entries) {
  exec("BEGIN");
  Stmt row(db_, "INSERT INTO entries (id, doc, source, begin, end, text) VALUES (?, ?, ?, ?, ?, ?)", path_);
  Stmt fts(db_, "INSERT INTO entries_fts (rowid, text) VALUES (?, ?)", path_);
  for (const Entry& e : entries) {
    sqlite3_bind_int64(row.s, 1, e.id);
    sqlite3_bind_int64(row.s, 2, e.doc);
    sqlite3_bind_text(row.s, 3, e.source.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(row.s, 4, e.begin);
    sqlite3_bind_int64(row.s, 5, e.end);
    sqlite3_bind_text(row.s, 6, e.text.data(), static_cast<int>(e.text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(fts.s, 1, e.id);
    sqlite3_bind_text(fts.s, 2, e.text.data(), static_cast<int>(e.text.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(row.s) != SQLITE_DONE || sqlite3_step(fts.s) != SQLITE_DONE)
      throw UserError(fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
    sqlite3_reset(row.s);
    sqlite3_reset(fts.s);
  }
  exec("COMMIT");
}

int64_t Store::count() const {
  Stmt st(db_, "SELECT count(*) FROM entries", path_);
  return sqlite3_step(st.s) == SQLITE_ROW ? sqlite3_column_int64(st.s, 0) : 0;
}

int64_t Store::next_doc() const {
  Stmt st(db_, "SELECT coalesce(max(doc) + 1, 0) FROM entries", path_);
  return sqlite3_step(st.s) == SQLITE_ROW ? sqlite3_column_int64(st.s, 0) : 0;
}

std::vector<Entry> Store::get(const std::vector<int64_t>& ids) const {
  std::vector<Entry> out;
  Stmt st(db_, "SELECT id, doc, source, begin, end, text FROM entries WHERE id = ?", path_);
  for (int64_t id : ids) {
    sqlite3_bind_int64(st.s, 1, id);
    if (sqlite3_step(st.s) != SQLITE_ROW)
      throw UserError(fmt::format("{}: no entry {} (the index files disagree; build it again)", path_, id));
    out.push_back({sqlite3_column_int64(st.s, 0), sqlite3_column_int64(st.s, 1), column_text(st.s, 2),
                   sqlite3_column_int64(st.s, 3), sqlite3_column_int64(st.s, 4), column_text(st.s, 5)});
    sqlite3_reset(st.s);
  }
  return out;
}

std::vector<std::pair<int64_t, double>> Store::lexical(const std::string& query, int64_t k) const {
  std::vector<std::pair<int64_t, double>> out;
  const std::string q = fts_query(query);
  if (q.empty()) return out;
  Stmt st(db_, "SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
               "ORDER BY bm25(entries_fts), rowid LIMIT ?", path_);
  sqlite3_bind_text(st.s, 1, q.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st.s, 2, k);
  // Ctrl-C and SIGTERM cut a long search short (SQLite asks every 10,000 instructions).
  sqlite3_progress_handler(db_, 10000, [](void*) { return interrupted() ? 1 : 0; }, nullptr);
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) out.emplace_back(sqlite3_column_int64(st.s, 0), -sqlite3_column_double(st.s, 1));
  sqlite3_progress_handler(db_, 0, nullptr, nullptr);
  if (rc == SQLITE_INTERRUPT && interrupted()) return out;  // the caller sees interrupted() and stops
  if (rc != SQLITE_DONE) throw UserError(fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
  return out;
}

std::string fts_query(const std::string& text) {
  std::string q, word;
  std::unordered_set<std::string> seen;
  auto flush = [&] {
    if (!word.empty() && seen.size() < kMaxQueryTerms && seen.insert(word).second)
      q += (q.empty() ? "\"" : " OR \"") + word + "\"";
    word.clear();
  };
  for (unsigned char c : text) {
    if (seen.size() == kMaxQueryTerms) break;
    if (std::isalnum(c) || c >= 0x80) word += static_cast<char>(std::tolower(c));
    else flush();
  }
  flush();
  return q;
}

}  // namespace slm::embed
