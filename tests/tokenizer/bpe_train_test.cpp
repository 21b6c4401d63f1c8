// tests/tokenizer/bpe_train_test.cpp: BPE training learns known merges, is deterministic,
// respects vocab size / min frequency / specials, and rejects bad options.
#include "tokenizer/bpe_train.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/byte_unicode.h"
#include "util/error.h"

#include <map>
#include <random>

namespace slm::tokenizer {

static std::vector<std::string> merge_strings(const BpeModel& m) {
  std::vector<std::string> out;
  for (auto [a, b] : m.merges) out.push_back(m.id_to_bytes[a] + " " + m.id_to_bytes[b]);
  return out;
}

// Sennrich et al.'s example. Pair counts: e s 9, s t 9 (tie -> smaller ids: 'e'=68 < 's'=82),
// then es t 9; l o 7 and o w 7 (tie -> 'l'=75 first), lo w 7; then the 6s: e w (68, 86) is the
// smallest pair among n e, e w, w est.
TEST(BpeTrain, LearnsKnownMerges) {
  WordCounts wc{{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}};
  TrainOptions opt;
  opt.vocab_size = 256 + 5 + 1;
  opt.min_frequency = 1;
  BpeModel m = train_bpe(wc, opt);
  EXPECT_EQ(merge_strings(m), (std::vector<std::string>{"e s", "es t", "l o", "lo w", "e w"}));
  EXPECT_EQ(m.vocab_size(), 262);
  EXPECT_EQ(m.id_to_bytes[256], "es");
  EXPECT_EQ(m.id_to_bytes[259], "low");
  EXPECT_EQ(m.special_id("<|endoftext|>"), 261);  // specials come last, as in GPT-2
  EXPECT_EQ(m.byte_id['!'], 0);                  // base ids follow GPT-2's order
}

TEST(BpeTrain, MinFrequencyStopsEarly) {
  WordCounts wc{{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}};
  TrainOptions opt;
  opt.vocab_size = 1000;
  opt.min_frequency = 7;  // e s (9), es t (9), l o (7), lo w (7); then nothing reaches 7
  BpeModel m = train_bpe(wc, opt);
  EXPECT_EQ(m.merges.size(), 4u);
  EXPECT_EQ(m.vocab_size(), 256 + 4 + 1);
}

TEST(BpeTrain, OverlappingPairsCountedCorrectly) {
  // "aaaa" x1: pairs a a = 3 occurrences but merging gives aa aa (2 merges of a a).
  WordCounts wc{{"aaaa", 1}, {"aab", 10}};
  TrainOptions opt;
  opt.vocab_size = 256 + 3 + 0;
  opt.specials = {};
  opt.min_frequency = 1;
  BpeModel m = train_bpe(wc, opt);
  // a a: 3 + 10 = 13 -> "aa"; then aa b: 10, aa aa: 1 -> "aab"; then aa aa: 1 -> "aaaa".
  EXPECT_EQ(merge_strings(m), (std::vector<std::string>{"a a", "aa b", "aa aa"}));
}

TEST(BpeTrain, DeterministicAndThreadIndependent) {
  std::string text = test::sample_text();
  WordCounts c1 = count_words({text}, 1), c2 = count_words({text.substr(0, 1000), text.substr(1000)}, 2);
  // Splitting the text differently changes nothing except across the cut, so compare on whole:
  WordCounts c3 = count_words({text}, 2);
  EXPECT_EQ(c1, c3);
  TrainOptions opt;
  opt.vocab_size = 400;
  BpeModel a = train_bpe(c1, opt), b = train_bpe(c3, opt);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(model_identity(a), model_identity(b));
  EXPECT_FALSE(c2.empty());
}

// Brute force: recount every pair before each merge; same tie-break (count, then smaller ids).
static std::vector<std::pair<int32_t, int32_t>> naive_merges(const WordCounts& wc, int merges,
                                                              int64_t min_freq) {
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  BpeModel base = train_bpe({}, TrainOptions{256, 1, {}});  // just the byte ids
  for (const auto& [w, n] : wc) {
    std::vector<int32_t> s;
    for (unsigned char ch : w) s.push_back(base.byte_id[ch]);
    words.emplace_back(s, n);
  }
  std::vector<std::pair<int32_t, int32_t>> out;
  for (int32_t next_id = 256; static_cast<int>(out.size()) < merges; ++next_id) {
    std::map<std::pair<int32_t, int32_t>, int64_t> count;
    for (const auto& [s, n] : words)
      for (size_t i = 0; i + 1 < s.size(); ++i) count[{s[i], s[i + 1]}] += n;
    std::pair<int32_t, int32_t> best{-1, -1};
    int64_t best_n = 0;
    for (const auto& [p, n] : count)
      if (n > best_n) best = p, best_n = n;  // map order: the first max has the smallest ids
    if (best_n < min_freq || best_n == 0) break;
    out.push_back(best);
    for (auto& [s, n] : words) {
      std::vector<int32_t> t;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
          t.push_back(next_id);
          ++i;
        } else {
          t.push_back(s[i]);
        }
      }
      s = t;
    }
  }
  return out;
}

TEST(BpeTrain, IncrementalCountsMatchBruteForce) {
  std::mt19937 rng(17);
  for (int iter = 0; iter < 20; ++iter) {
    WordCounts wc;
    for (int i = 0; i < 30; ++i) {
      std::string w(1 + rng() % 12, 'a');
      for (auto& ch : w) ch = "abcab"[rng() % 5];
      wc[w] += 1 + rng() % 5;
    }
    wc[std::string(500 + rng() % 100, 'a') + "b"] += 1;  // one long repetitive word
    TrainOptions opt{256 + 40, 1, {}};
    BpeModel m = train_bpe(wc, opt);
    ASSERT_EQ(m.merges, naive_merges(wc, 40, 1)) << "iteration " << iter;
  }
}

TEST(BpeTrain, RejectsBadOptions) {
  WordCounts wc{{"ab", 3}};
  TrainOptions opt;
  opt.vocab_size = 256;  // + 1 special does not fit
  try {
    train_bpe(wc, opt);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "vocab size 256 is smaller than 256 bytes + 1 special tokens = 257");
  }
  opt.vocab_size = 300;
  opt.specials = {"<a>", "<a>"};
  EXPECT_THROW(train_bpe(wc, opt), UserError);
  opt.specials = {};
  opt.min_frequency = 0;
  EXPECT_THROW(train_bpe(wc, opt), UserError);
}

}  // namespace slm::tokenizer
