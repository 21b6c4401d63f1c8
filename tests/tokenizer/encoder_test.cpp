// tests/tokenizer/encoder_test.cpp: encoding agrees with GPT-2's reference merge loop, decode is
// the exact inverse for any bytes (invalid UTF-8 included), and special tokens behave.
#include "tokenizer/encoder.h"

#include <gtest/gtest.h>

#include <climits>
#include <random>

#include "test_util.h"
#include "tokenizer/bpe_train.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::tokenizer {

static BpeModel trained(int vocab = 600) {
  std::string text = test::sample_text();
  if (std::string p = test::shared_data("tinyshakespeare.txt"); !p.empty()) text += read_file(p);
  TrainOptions opt;
  opt.vocab_size = vocab;
  return train_bpe(count_words({text}, 2), opt);
}

// GPT-2's encoder.py bpe(): merge the lowest-ranked pair everywhere, left to right; repeat.
static std::vector<uint32_t> reference_bpe(const BpeModel& m, const std::string& word) {
  std::vector<std::string> parts;
  for (char c : word) parts.emplace_back(1, c);
  std::unordered_map<std::string, int> rank;
  for (size_t r = 0; r < m.merges.size(); ++r)
    rank.emplace(m.id_to_bytes[m.merges[r].first] + '\0' + m.id_to_bytes[m.merges[r].second],
                 static_cast<int>(r));
  for (;;) {
    int best = INT_MAX;
    std::string bl, br;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = rank.find(parts[i] + '\0' + parts[i + 1]);
      if (it != rank.end() && it->second < best) {
        best = it->second;
        bl = parts[i];
        br = parts[i + 1];
      }
    }
    if (best == INT_MAX) break;
    std::vector<std::string> next;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i + 1 < parts.size() && parts[i] == bl && parts[i + 1] == br) {
        next.push_back(bl + br);
        ++i;
      } else {
        next.push_back(parts[i]);
      }
    }
    parts = next;
  }
  std::vector<uint32_t> ids;
  for (const auto& p : parts) ids.push_back(static_cast<uint32_t>(m.bytes_to_id.at(p)));
  return ids;
}

TEST(Encoder, MatchesGpt2ReferenceMergeLoop) {
  BpeModel m = trained();
  Encoder enc(m);
  Pretokenizer pre;
  std::string text = test::sample_text() + " aaaaaaa  eeeeeee thethethe lowerlowest";
  int words = 0;
  pre.split(text, [&](std::string_view w) {
    std::vector<uint32_t> got;
    enc.encode_word(w, got);
    EXPECT_EQ(got, reference_bpe(m, std::string(w))) << "word '" << w << "'";
    ++words;
  });
  EXPECT_GT(words, 100);
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {  // random words over a small alphabet: many repeated pairs
    std::string w(1 + rng() % 40, 'a');
    for (auto& c : w) c = "aeht s"[rng() % 6];
    std::vector<uint32_t> got;
    enc.encode_word(w, got);
    EXPECT_EQ(got, reference_bpe(m, w)) << "word '" << w << "'";
  }
}

TEST(Encoder, RoundTripsRandomBytesAndText) {
  BpeModel m = trained();
  Encoder enc(m);
  std::mt19937 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s(rng() % 500, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    std::vector<uint32_t> ids;
    enc.encode(s, ids);
    ASSERT_EQ(decode(m, ids), s);
  }
  std::string text = test::sample_text();
  std::vector<uint32_t> ids;
  enc.encode(text, ids);
  EXPECT_EQ(decode(m, ids), text);
  EXPECT_LT(ids.size(), text.size() * 3 / 4);  // merges actually compress
  std::vector<uint32_t> again;
  enc.encode(text, again);  // second time from the word cache
  EXPECT_EQ(again, ids);
}

TEST(Encoder, SpecialTokens) {
  BpeModel m = trained();
  const uint32_t eot = static_cast<uint32_t>(m.special_id("<|endoftext|>"));
  Encoder enc(m);
  std::string text = "one<|endoftext|>two";
  std::vector<uint32_t> plain, special;
  enc.encode(text, plain);
  enc.encode_with_specials(text, special);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_EQ(std::count(special.begin(), special.end(), eot), 1);
  EXPECT_EQ(decode(m, plain), text);
  EXPECT_EQ(decode(m, special), text);
  std::vector<uint32_t> bad{static_cast<uint32_t>(m.vocab_size())};
  EXPECT_THROW(decode(m, bad), UserError);
}

}  // namespace slm::tokenizer
