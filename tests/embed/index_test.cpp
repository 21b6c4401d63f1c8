// tests/embed/index_test.cpp: the index folder without a model: FTS5 ranking on a hand-made corpus,
// FAISS (flat, hnsw, ivf; fp32 and fp16) against a brute-force ranking, .npy round trips and fp16
// rounding, reciprocal-rank fusion, create/append/open and the refusals (other model, corrupt
// file) leaving the index untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include "embed/index.h"
#include "embed/npy.h"
#include "embed/search.h"
#include "test_util.h"
#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace slm::embed {
namespace {

std::vector<float> unit_vectors(int64_t n, int64_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> v(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int64_t j = 0; j < d; ++j) s += (v[static_cast<size_t>(i * d + j)] = g(rng)) * v[static_cast<size_t>(i * d + j)];
    for (int64_t j = 0; j < d; ++j) v[static_cast<size_t>(i * d + j)] /= std::sqrt(s);
  }
  return v;
}

// Ids of the k largest inner products of query q, by brute force (ties by id).
std::vector<int64_t> brute_top(const std::vector<float>& x, int64_t n, int64_t d, const float* q, int64_t k) {
  std::vector<std::pair<float, int64_t>> s;
  for (int64_t i = 0; i < n; ++i) {
    float dot = 0;
    for (int64_t j = 0; j < d; ++j) dot += x[static_cast<size_t>(i * d + j)] * q[j];
    s.push_back({-dot, i});
  }
  std::sort(s.begin(), s.end());
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < k; ++i) ids.push_back(s[static_cast<size_t>(i)].second);
  return ids;
}

// Mean share of the brute-force top k that the index returns, over `nq` queries.
double recall_vs_brute(const VectorIndexSpec& spec, int64_t effort) {
  const int64_t n = 3000, d = 24, k = 10, nq = 50;
  const std::vector<float> x = unit_vectors(n, d, 1), q = unit_vectors(nq, d, 2);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  VectorIndex ix(spec, d);
  ix.add(x.data(), n, ids.data());
  const SearchResult r = ix.search(q.data(), nq, k, effort);
  double hit = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const std::vector<int64_t> want = brute_top(x, n, d, q.data() + i * d, k);
    for (int64_t j = 0; j < k; ++j)
      hit += std::count(want.begin(), want.end(), r.ids[static_cast<size_t>(i * k + j)]);
  }
  return hit / static_cast<double>(nq * k);
}

TEST(VectorIndex, FlatEqualsBruteForceExactly) {
  const int64_t n = 500, d = 16, k = 7;
  const std::vector<float> x = unit_vectors(n, d, 3), q = unit_vectors(5, d, 4);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 100);  // ids need not start at 0
  VectorIndex ix({}, d);
  ix.add(x.data(), n, ids.data());
  const SearchResult r = ix.search(q.data(), 5, k);
  for (int64_t i = 0; i < 5; ++i) {
    std::vector<int64_t> want = brute_top(x, n, d, q.data() + i * d, k);
    for (int64_t j = 0; j < k; ++j) EXPECT_EQ(r.ids[static_cast<size_t>(i * k + j)], want[static_cast<size_t>(j)] + 100);
  }
}

TEST(VectorIndex, ApproximateKindsFindTheNearest) {
  EXPECT_GE(recall_vs_brute({"flat", "fp16", 32, 0}, 0), 0.97);  // fp16 storage: ties may swap
  EXPECT_GE(recall_vs_brute({"hnsw", "fp32", 32, 0}, 0), 0.9);
  EXPECT_GE(recall_vs_brute({"hnsw", "fp16", 16, 0}, 128), 0.85);
  EXPECT_GE(recall_vs_brute({"ivf", "fp32", 32, 16}, 16), 0.999);  // every list probed: exact
  EXPECT_GE(recall_vs_brute({"ivf", "fp32", 32, 0}, 8), 0.5);
}

TEST(VectorIndex, RefusesBadSpecsAndCorruptFiles) {
  EXPECT_THROW(validate(VectorIndexSpec{"lsh", "fp32", 32, 0}), UserError);
  EXPECT_THROW(validate(VectorIndexSpec{"flat", "int8", 32, 0}), UserError);
  test::TempDir tmp;
  test::write(tmp / "bad.faiss", "this is not a FAISS index at all");
  EXPECT_THROW(VectorIndex::read(tmp / "bad.faiss"), UserError);
  EXPECT_THROW(VectorIndex::read(tmp / "missing.faiss"), UserError);
}

TEST(Store, Fts5RanksByBm25) {
  test::TempDir tmp;
  Store s = Store::create(tmp / "db.sqlite");
  s.add({{0, 0, "a", 0, 10, "The king rode to the castle at dawn."},
         {1, 1, "a", 0, 10, "Bananas and apples are fruit; a banana a day."},
         {2, 2, "b", 0, 10, "Banana bread: bananas, flour, sugar, and more banana."},
         {3, 3, "b", 0, 10, "Nothing to see here, only words."}});
  auto r = s.lexical("banana", 10);
  ASSERT_EQ(r.size(), 2u);  // whole words only (FTS5's unicode61 tokenizer does not stem)
  EXPECT_EQ(r[0].first, 2);  // three "banana" against two in a text of similar length
  EXPECT_EQ(r[1].first, 1);
  EXPECT_GT(r[0].second, r[1].second);
  r = s.lexical("castle king!", 10);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].first, 0);
  EXPECT_TRUE(s.lexical("zebra", 10).empty());
  EXPECT_EQ(fts_query("Don't panic!"), "\"don\" OR \"t\" OR \"panic\"");
  EXPECT_EQ(fts_query("  ?! "), "");
  // Each word once, the first kMaxQueryTerms distinct ones: a long query stays a short search.
  EXPECT_EQ(fts_query("the cat and THE cat"), "\"the\" OR \"cat\" OR \"and\"");
  std::string many;
  for (int i = 0; i < 5000; ++i) many += "w" + std::to_string(i % 1000) + " ";
  const std::string q = fts_query(many);
  size_t terms = 1;
  for (size_t at = q.find(" OR "); at != std::string::npos; at = q.find(" OR ", at + 1)) ++terms;
  EXPECT_EQ(terms, kMaxQueryTerms);
  EXPECT_EQ(q.substr(0, 16), "\"w0\" OR \"w1\" OR ");
  EXPECT_EQ(s.get({2, 0})[0].text.substr(0, 6), "Banana");
  EXPECT_EQ(s.count(), 4);
  EXPECT_EQ(s.next_doc(), 4);
}

TEST(Npy, RoundTripAndHalfRounding) {
  test::TempDir tmp;
  NpyArray a{"<f4", 3, 2, std::string(24, '\0')};
  const float v[6] = {1, -2, 0.5f, 3.25f, -0.125f, 7};
  std::memcpy(a.data.data(), v, sizeof v);
  write_npy(tmp / "a.npy", a);
  const NpyArray b = read_npy(tmp / "a.npy");
  EXPECT_EQ(b.descr, "<f4");
  EXPECT_EQ(b.rows, 3);
  EXPECT_EQ(b.cols, 2);
  EXPECT_EQ(b.data, a.data);
  EXPECT_EQ((std::filesystem::file_size(tmp / "a.npy") - 24) % 64, 0u);  // the header fills 64-byte blocks
  test::write(tmp / "short.npy", read_file(tmp / "a.npy").substr(0, 140));
  EXPECT_THROW(read_npy(tmp / "short.npy"), UserError);
  EXPECT_EQ(fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(fp16_bits(-2.0f), 0xc000);
  EXPECT_EQ(fp16_bits(0.1f), 0x2e66);
  EXPECT_EQ(fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(fp16_bits(1e6f), 0x7c00);
  EXPECT_EQ(fp16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // a tie rounds to even
  EXPECT_EQ(fp16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Search, ReciprocalRankFusion) {
  const std::vector<Hit> a = {{5, 0.9}, {7, 0.8}, {9, 0.1}}, b = {{7, 3}, {1, 2}};
  const std::vector<Hit> f = fuse_rrf({a, b}, 3, 60);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].id, 7);  // 1/62 + 1/61
  EXPECT_NEAR(f[0].score, 1.0 / 62 + 1.0 / 61, 1e-12);
  EXPECT_EQ(f[1].id, 5);  // 1/61, before 1 (1/62) and 9 (1/63)
  EXPECT_EQ(f[2].id, 1);
}

NewEntries batch(int64_t docs, int64_t dim, uint32_t seed, const std::string& word) {
  NewEntries b;
  b.dim = dim;
  for (int64_t i = 0; i < docs; ++i)
    b.entries.push_back({0, i, "src.txt", 0, 5, word + " number " + std::to_string(i)});
  b.vectors = unit_vectors(docs, dim, seed);
  return b;
}

std::string folder_hash(const std::string& dir) {
  std::string all;
  for (const char* f : {"/index.sqlite", "/vectors.faiss", "/embeddings.npy"}) all += read_file(dir + f);
  return hash_hex(all);
}

TEST(Index, CreateAppendOpenAndRefusals) {
  test::TempDir tmp;
  const std::string dir = tmp / "ix";
  Meta meta = {{"model_identity", "m1"}, {"tokenizer_identity", "t1"}, {"pooling", "mean"}, {"window", "64"},
               {"dim", "8"}};
  NewEntries first = batch(20, 8, 5, "apple");
  const std::vector<float> first_vectors = first.vectors;
  create_index(dir, meta, {"flat", "fp32", 32, 0}, std::move(first), false);
  EXPECT_THROW(create_index(dir, meta, {}, batch(2, 8, 6, "x"), false), UserError);  // exists
  EXPECT_EQ(append_index(dir, meta, batch(5, 8, 7, "cherry")), 20);
  OpenIndex ix = open_index(dir);
  EXPECT_EQ(ix.store.count(), 25);
  EXPECT_EQ(ix.vectors.size(), 25);
  EXPECT_EQ(ix.store.get({22})[0].doc, 22);  // document numbers continue
  const auto words = ix.store.lexical("cherry", 10);
  ASSERT_EQ(words.size(), 5u);
  EXPECT_GE(words[0].first, 20);
  // The first entry's own vector finds it first; embeddings.npy holds the same rows.
  const std::vector<Hit> hits = search_index(ix, SearchMode::kVector, "", first_vectors.data(), 3);
  EXPECT_EQ(hits[0].id, 0);
  EXPECT_NEAR(hits[0].score, 1.0, 1e-5);
  const NpyArray npy = read_npy(dir + "/embeddings.npy");
  EXPECT_EQ(npy.rows, 25);
  EXPECT_EQ(std::memcmp(npy.data.data(), first_vectors.data(), first_vectors.size() * 4), 0);
  // k beyond the index's size means all of them, in every mode (a k of a billion once allocated
  // a billion result slots).
  for (SearchMode m : {SearchMode::kVector, SearchMode::kLexical, SearchMode::kHybrid})
    EXPECT_EQ(search_index(ix, m, "number", first_vectors.data(), 1'000'000'000).size(), 25u);
  // Hybrid: both lists agree on entry 0 when the words match too.
  EXPECT_EQ(search_index(ix, SearchMode::kHybrid, "apple number 0", first_vectors.data(), 3)[0].id, 0);

  const std::string before = folder_hash(dir);
  Meta other = meta;
  other["model_identity"] = "m2";
  try {
    append_index(dir, other, batch(3, 8, 8, "x"));
    FAIL() << "append of another model's vectors was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("built with another model"), std::string::npos) << e.what();
  }
  other = meta;
  other["pooling"] = "last";
  EXPECT_THROW(append_index(dir, other, batch(3, 8, 8, "x")), UserError);
  EXPECT_EQ(folder_hash(dir), before);  // refusals write nothing
  EXPECT_THROW(open_index(tmp / "nowhere"), UserError);
  test::write(dir + "/vectors.faiss", "garbage");
  EXPECT_THROW(open_index(dir), UserError);
  test::write(dir + "/index.sqlite", "garbage garbage garbage garbage garbage garbage garbage garbage");
  EXPECT_THROW(open_index(dir), UserError);
}

TEST(Index, Fp16StorageWritesHalfNpy) {
  test::TempDir tmp;
  Meta meta = {{"model_identity", "m"}, {"tokenizer_identity", "t"}, {"pooling", "mean"}, {"window", "8"}, {"dim", "4"}};
  create_index(tmp / "ix", meta, {"flat", "fp16", 32, 0}, batch(10, 4, 9, "w"), false);
  const NpyArray npy = read_npy(tmp / "ix/embeddings.npy");
  EXPECT_EQ(npy.descr, "<f2");
  EXPECT_EQ(npy.data.size(), 10u * 4 * 2);
  EXPECT_EQ(open_index(tmp / "ix").meta.at("dtype"), "fp16");
}

}  // namespace
}  // namespace slm::embed
