// tests/embed/pairs_test.cpp: contrastive pairs (embed/pairs.h): distinct documents per batch,
// anchor and positive adjacent spans of their document within the length limits, the same
// pairs for the same (seed, step) whatever slice a rank asks for, other pairs for other steps.
#include "embed/pairs.h"

#include <gtest/gtest.h>

#include <set>

namespace slm::embed {
namespace {

constexpr int64_t kEot = 999;

std::vector<std::vector<uint32_t>> make_docs() {
  std::vector<std::vector<uint32_t>> docs;
  for (uint32_t d = 0; d < 50; ++d) {
    std::vector<uint32_t> ids;
    for (uint32_t t = 0; t < 10 + 7 * d; ++t) ids.push_back(d * 1000 + t);  // token says doc and position
    docs.push_back(ids);
  }
  return docs;
}

TEST(Pairs, EligibleDocsAreLongEnough) {
  PairOptions o;
  o.anchor_min = 8, o.positive_min = 8;
  const auto docs = make_docs();
  const std::vector<int64_t> e = eligible_docs(docs, o);
  for (size_t d = 0; d < docs.size(); ++d) {
    const bool in = std::find(e.begin(), e.end(), static_cast<int64_t>(d)) != e.end();
    EXPECT_EQ(in, docs[d].size() >= 16) << d;
  }
}

TEST(Pairs, SpansAreAdjacentDistinctAndBounded) {
  PairOptions o;
  o.anchor_min = 4, o.anchor_max = 12, o.positive_min = 5, o.window = 20, o.seed = 3;
  const auto docs = make_docs();
  const std::vector<int64_t> e = eligible_docs(docs, o);
  for (int64_t step = 0; step < 20; ++step) {
    const std::vector<Pair> pairs = step_pairs(docs, e, o, step, 16, 0, 16, kEot);
    ASSERT_EQ(pairs.size(), 16u);
    std::set<int64_t> seen;
    for (const Pair& p : pairs) {
      EXPECT_TRUE(seen.insert(p.doc).second) << "document " << p.doc << " twice in step " << step;
      ASSERT_EQ(p.anchor.front(), kEot);
      ASSERT_EQ(p.positive.front(), kEot);
      const int64_t a = static_cast<int64_t>(p.anchor.size()) - 1, q = static_cast<int64_t>(p.positive.size()) - 1;
      EXPECT_GE(a, o.anchor_min);
      EXPECT_LE(a, o.anchor_max);
      EXPECT_GE(q, std::min<int64_t>(o.positive_min, o.window - 1));
      EXPECT_LE(q, o.window - 1);
      // Tokens encode (document, position): the positive starts right after the anchor ends.
      for (size_t i = 1; i < p.anchor.size(); ++i) EXPECT_EQ(p.anchor[i] / 1000, p.doc);
      for (size_t i = 2; i < p.anchor.size(); ++i) EXPECT_EQ(p.anchor[i], p.anchor[i - 1] + 1);
      EXPECT_EQ(p.positive[1], p.anchor.back() + 1);
      for (size_t i = 2; i < p.positive.size(); ++i) EXPECT_EQ(p.positive[i], p.positive[i - 1] + 1);
      EXPECT_LT(p.positive.back() % 1000, static_cast<int64_t>(docs[static_cast<size_t>(p.doc)].size()));
    }
  }
}

TEST(Pairs, SlicesMakeTheSameBatchAndStepsDiffer) {
  PairOptions o;
  o.window = 32;
  const auto docs = make_docs();
  const std::vector<int64_t> e = eligible_docs(docs, o);
  const std::vector<Pair> whole = step_pairs(docs, e, o, 7, 12, 0, 12, kEot);
  std::vector<Pair> parts;
  for (int64_t r = 0; r < 4; ++r)  // 4 ranks, 3 pairs each
    for (Pair& p : step_pairs(docs, e, o, 7, 12, 3 * r, 3 * r + 3, kEot)) parts.push_back(std::move(p));
  ASSERT_EQ(parts.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(parts[i].doc, whole[i].doc);
    EXPECT_EQ(parts[i].anchor, whole[i].anchor);
    EXPECT_EQ(parts[i].positive, whole[i].positive);
  }
  const std::vector<Pair> again = step_pairs(docs, e, o, 7, 12, 0, 12, kEot);
  const std::vector<Pair> next = step_pairs(docs, e, o, 8, 12, 0, 12, kEot);
  int same = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(again[i].anchor, whole[i].anchor);
    same += next[i].anchor == whole[i].anchor;
  }
  EXPECT_LT(same, 3);
}

TEST(Pairs, EveryEligibleDocumentIsUsedOverSteps) {
  PairOptions o;
  o.window = 32;
  const auto docs = make_docs();
  const std::vector<int64_t> e = eligible_docs(docs, o);
  std::set<int64_t> used;
  for (int64_t step = 0; step < 30; ++step)
    for (const Pair& p : step_pairs(docs, e, o, step, 8, 0, 8, kEot)) used.insert(p.doc);
  EXPECT_EQ(used.size(), e.size());
}

}  // namespace
}  // namespace slm::embed
