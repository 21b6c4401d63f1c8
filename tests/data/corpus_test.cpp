// tests/data/corpus_test.cpp: files, directories and globs become documents by the separator
// rules; JSON lines; clear errors for missing paths, bad lines and empty corpora.
#include "data/corpus.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "util/error.h"

namespace slm::data {

static std::vector<std::string> docs_of(const std::vector<std::string>& in, CorpusOptions o = {}) {
  Corpus c = load_corpus(in, o);
  return {c.docs.begin(), c.docs.end()};
}

static std::string error_of(const std::vector<std::string>& in, CorpusOptions o = {}) {
  try {
    load_corpus(in, o);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

using V = std::vector<std::string>;

TEST(Corpus, Separators) {
  test::TempDir tmp;
  test::write(tmp / "f.txt", "one\ntwo\n\n\nthree\n  \nfour\n%\nfive\n%\n");
  CorpusOptions o;
  EXPECT_EQ(docs_of({tmp / "f.txt"}, o).size(), 1u);
  o.separator = "blank";
  EXPECT_EQ(docs_of({tmp / "f.txt"}, o), (V{"one\ntwo", "three", "four\n%\nfive\n%"}));
  o.separator = "line";
  EXPECT_EQ(docs_of({tmp / "f.txt"}, o), (V{"one", "two", "three", "four", "%", "five", "%"}));
  o.separator = "\\n%\\n";
  EXPECT_EQ(docs_of({tmp / "f.txt"}, o), (V{"one\ntwo\n\n\nthree\n  \nfour", "five"}));
  EXPECT_EQ(unescape("a\\tb\\\\n"), "a\tb\\n");
}

TEST(Corpus, JsonLines) {
  test::TempDir tmp;
  test::write(tmp / "d.jsonl", "{\"text\": \"first\"}\n\n{\"text\": \"sec\\nond\", \"id\": 2}\n");
  EXPECT_EQ(docs_of({tmp / "d.jsonl"}), (V{"first", "sec\nond"}));
  CorpusOptions o;
  o.jsonl_field = "body";
  EXPECT_EQ(error_of({tmp / "d.jsonl"}, o), tmp / "d.jsonl" + ":1: no string field \"body\"");
  test::write(tmp / "bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": \n");
  EXPECT_EQ(error_of({tmp / "bad.jsonl"}), tmp / "bad.jsonl" + ":2: not valid JSON");
}

TEST(Corpus, DirectoriesGlobsAndDuplicates) {
  test::TempDir tmp;
  test::write(tmp / "c/b.txt", "bee");
  test::write(tmp / "c/a.txt", "ay");
  test::write(tmp / "c/sub/z.md", "zed");
  test::write(tmp / "c/.hidden", "no");
  test::write(tmp / "c/index.dat", std::string("\0\1binary", 8));
  std::filesystem::create_symlink("a.txt", tmp / "c/a.u8");  // same file twice
  EXPECT_EQ(docs_of({tmp / "c"}), (V{"ay", "bee", "zed"}));
  EXPECT_EQ(docs_of({tmp / "c/*.txt"}), (V{"ay", "bee"}));
  EXPECT_EQ(docs_of({tmp / "c/a.txt", tmp / "c"}), (V{"ay", "bee", "zed"}));
}

TEST(Corpus, Errors) {
  test::TempDir tmp;
  EXPECT_EQ(error_of({tmp / "nope.txt"}), tmp / "nope.txt" + ": no such file or directory");
  EXPECT_EQ(error_of({tmp / "*.nothing"}), tmp / "*.nothing" + ": pattern matches no files");
  test::write(tmp / "empty.txt", "");
  EXPECT_NE(error_of({tmp / "empty.txt"}).find("corpus is empty"), std::string::npos);
  std::filesystem::create_directory(tmp / "emptydir");
  EXPECT_NE(error_of({tmp / "emptydir"}).find("corpus is empty: 0 file(s)"), std::string::npos);
  CorpusOptions o;
  o.format = "csv";
  EXPECT_NE(error_of({tmp / "empty.txt"}, o).find("--format"), std::string::npos);
}

}  // namespace slm::data
