// tests/tokenizer/pretokenize_test.cpp: GPT-2's pre-tokenization pattern, bad UTF-8, and the
// safe split points used to parallelize one large document.
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace slm::tokenizer {

static std::vector<std::string> pieces(std::string_view text) {
  Pretokenizer p;
  std::vector<std::string> out;
  p.split(text, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

TEST(Pretokenize, Gpt2Splits) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("I'm here, aren't we?"), (V{"I", "'m", " here", ",", " aren", "'t", " we", "?"}));
  EXPECT_EQ(pieces("a  b"), (V{"a", " ", " b"}));         // \s+(?!\S) leaves one space for " b"
  EXPECT_EQ(pieces("x\n\n  y"), (V{"x", "\n\n ", " y"}));
  EXPECT_EQ(pieces("end   "), (V{"end", "   "}));
  EXPECT_EQ(pieces("abc123 4.5"), (V{"abc", "123", " 4", ".", "5"}));
  EXPECT_EQ(pieces("café 東京"), (V{"café", " 東京"}));    // \p{L} is Unicode-aware
  EXPECT_EQ(pieces("x!!! ..."), (V{"x", "!!!", " ..."}));
}

TEST(Pretokenize, InvalidUtf8BytesArePiecesOfTheirOwn) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("ab\xff\xfe cd"), (V{"ab", "\xff\xfe", " cd"}));
  EXPECT_EQ(pieces("\xC3"), (V{"\xC3"}));  // truncated sequence at the end
}

TEST(Pretokenize, PiecesCoverRandomBytes) {
  std::mt19937 rng(7);
  Pretokenizer p;
  for (int iter = 0; iter < 200; ++iter) {
    std::string s(rng() % 300, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    std::string joined;
    p.split(s, [&](std::string_view w) {
      EXPECT_FALSE(w.empty());
      joined += w;
    });
    ASSERT_EQ(joined, s);
  }
}

TEST(Pretokenize, SplitForThreadsGivesTheSamePieces) {
  std::string text = test::sample_text();
  for (size_t chunk : {7u, 50u, 300u}) {
    std::vector<std::string> parts;
    Pretokenizer p;
    std::string joined;
    for (std::string_view c : split_for_threads(text, chunk)) {
      joined += c;
      p.split(c, [&](std::string_view w) { parts.emplace_back(w); });
    }
    EXPECT_EQ(joined, text);
    EXPECT_EQ(parts, pieces(text)) << "chunk " << chunk;
    EXPECT_GT(split_for_threads(text, chunk).size(), 1u);
  }
}

}  // namespace slm::tokenizer

namespace slm::tokenizer {

// Random texts dense in whitespace runs, newlines and multi-byte characters: cutting at the
// safe points never changes the pieces.
TEST(Pretokenize, SplitForThreadsOnRandomText) {
  const std::vector<std::string> atoms{"a", "b", " ", "  ", "\n", "\n\n", ".", "é", "\xE3\x80\x80", "1", "'s"};
  std::mt19937 rng(5);
  for (int iter = 0; iter < 300; ++iter) {
    std::string text;
    for (int i = 0, n = 1 + rng() % 200; i < n; ++i) text += atoms[rng() % atoms.size()];
    std::vector<std::string> parts;
    Pretokenizer p;
    for (std::string_view c : split_for_threads(text, 1 + rng() % 20))
      p.split(c, [&](std::string_view w) { parts.emplace_back(w); });
    ASSERT_EQ(parts, pieces(text)) << "text '" << text << "'";
  }
}

}  // namespace slm::tokenizer
