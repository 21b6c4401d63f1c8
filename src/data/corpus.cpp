// data/corpus.cpp: see corpus.h.
#include "data/corpus.h"

#include <glob.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.h"

namespace slm::data {
namespace fs = std::filesystem;

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
  }
  return out;
}

static bool looks_binary(const std::string& path) {
  MappedFile m(path);
  std::string_view head = m.view().substr(0, 64 * 1024);
  return head.find('\0') != std::string_view::npos;
}

static bool is_hidden(const fs::path& p) {
  std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs, std::vector<std::string>* skipped) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& p) {
    std::error_code ec;
    std::string real = fs::canonical(p, ec).string();
    if (ec) real = p;
    if (seen.insert(real).second) out.push_back(p);
  };
  auto add_path = [&](const std::string& p) {
    std::error_code ec;
    if (!fs::exists(p, ec)) throw UserError(fmt::format("{}: no such file or directory", p));
    if (!fs::is_directory(p, ec)) {
      add(p);
      return;
    }
    std::vector<std::string> files;
    fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec), end;
    if (ec) throw UserError(fmt::format("{}: cannot list directory: {}", p, ec.message()));
    for (; it != end; it.increment(ec)) {
      if (ec) throw UserError(fmt::format("{}: cannot list directory: {}", p, ec.message()));
      if (is_hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      if (!looks_binary(f)) add(f);
      else if (skipped) skipped->push_back(f);
  };
  for (const std::string& in : inputs) {
    if (in.find_first_of("*?[") == std::string::npos || fs::exists(in)) {
      add_path(in);
      continue;
    }
    glob_t g{};
    int rc = ::glob(in.c_str(), 0, nullptr, &g);
    if (rc != 0) {
      globfree(&g);
      throw UserError(fmt::format("{}: pattern matches no files", in));
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) add_path(g.gl_pathv[i]);
    globfree(&g);
  }
  return out;
}

static bool is_jsonl(const std::string& path, const std::string& format) {
  if (format == "jsonl") return true;
  if (format == "text") return false;
  std::string ext = fs::path(path).extension().string();
  return ext == ".jsonl" || ext == ".json";
}

// Splits a text file's contents into documents by the separator rule; keeps non-empty ones.
static void split_text(std::string_view text, const std::string& sep,
                       std::vector<std::string_view>& docs) {
  auto push = [&](std::string_view d) {
    if (!d.empty()) docs.push_back(d);
  };
  if (sep.empty()) return push(text);
  if (sep == "line" || sep == "blank") {
    size_t start = 0, doc_start = std::string_view::npos, doc_end = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      size_t end = nl == std::string_view::npos ? text.size() : nl;
      std::string_view line = text.substr(start, end - start);
      bool blank = line.find_first_not_of(" \t\r") == std::string_view::npos;
      if (sep == "line") {
        if (!blank) push(line);
      } else if (blank) {
        if (doc_start != std::string_view::npos) push(text.substr(doc_start, doc_end - doc_start));
        doc_start = std::string_view::npos;
      } else {
        if (doc_start == std::string_view::npos) doc_start = start;
        doc_end = end;
      }
      start = end + 1;
    }
    if (sep == "blank" && doc_start != std::string_view::npos)
      push(text.substr(doc_start, doc_end - doc_start));
    return;
  }
  const std::string lit = unescape(sep);
  size_t start = 0;
  for (size_t f; (f = text.find(lit, start)) != std::string_view::npos; start = f + lit.size())
    push(text.substr(start, f - start));
  push(text.substr(start));
}

static void read_jsonl(const std::string& path, std::string_view text, const std::string& field,
                       Corpus& c, int64_t& ndocs) {
  size_t start = 0, line_no = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw UserError(fmt::format("{}:{}: not valid JSON", path, line_no));
    }
    if (!j.is_object() || !j.contains(field) || !j[field].is_string())
      throw UserError(fmt::format("{}:{}: no string field \"{}\"", path, line_no, field));
    std::string doc = j[field].get<std::string>();
    if (doc.empty()) continue;
    c.owned.push_back(std::move(doc));
    c.docs.push_back(c.owned.back());
    ++ndocs;
  }
}

Corpus load_corpus(const std::vector<std::string>& inputs, const CorpusOptions& opt) {
  if (opt.format != "auto" && opt.format != "text" && opt.format != "jsonl")
    throw UserError(fmt::format("--format: \"{}\" is not one of auto, text, jsonl", opt.format));
  if (inputs.empty()) throw UserError("no input files given");
  Corpus c;
  std::vector<std::string> binary;
  for (const std::string& path : expand_inputs(inputs, &binary)) {
    auto map = std::make_unique<MappedFile>(path);
    Source src{path, static_cast<int64_t>(map->size()), 0};
    size_t before = c.docs.size();
    if (is_jsonl(path, opt.format)) {
      read_jsonl(path, map->view(), opt.jsonl_field, c, src.documents);
    } else {
      split_text(map->view(), opt.separator, c.docs);
      src.documents = static_cast<int64_t>(c.docs.size() - before);
      c.maps.push_back(std::move(map));
    }
    c.sources.push_back(src);
  }
  for (std::string_view d : c.docs) c.bytes += static_cast<int64_t>(d.size());
  if (!binary.empty() && !c.docs.empty())  // never silently: a text file with one stray NUL byte is skipped too
    std::fprintf(stderr, "warning: skipped %zu file(s) that look binary (a NUL byte in the first 64 KiB): %s%s\n",
                 binary.size(), binary[0].c_str(), binary.size() > 1 ? fmt::format(" and {} more", binary.size() - 1).c_str() : "");
  if (c.docs.empty())
    throw UserError(fmt::format("corpus is empty: {} file(s) with no text in them{}{}", c.sources.size(),
                                c.sources.empty() ? "" : fmt::format(" (first: {})", c.sources[0].path),
                                binary.empty() ? "" : fmt::format("; {} binary file(s) skipped (first: {})",
                                                                  binary.size(), binary[0])));
  return c;
}

}  // namespace slm::data
