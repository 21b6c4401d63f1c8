// tests/embed/windows_test.cpp: documents cut into windows: each starts with the end-of-text token,
// holds at most `window` tokens, its byte range spells exactly its tokens, consecutive windows
// start `stride` tokens apart and the last reaches the document's end.
#include "embed/windows.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/bpe_train.h"

namespace slm::embed {
namespace {

TEST(Windows, CoverTheDocumentWithExactByteRanges) {
  tokenizer::TrainOptions opt;
  opt.vocab_size = 400;
  const tokenizer::BpeModel tok = tokenizer::train_bpe(tokenizer::count_words({test::sample_text()}, 2), opt);
  tokenizer::Encoder enc(tok);
  const std::string doc = test::sample_text().substr(0, 700);
  std::vector<uint32_t> all;
  enc.encode(doc, all);
  for (const auto& [window, stride] : std::vector<std::pair<int64_t, int64_t>>{{16, 15}, {16, 8}, {1000, 999}}) {
    const std::vector<Window> ws = cut_windows(tok, enc, doc, 3, window, stride, 7);
    ASSERT_FALSE(ws.empty());
    EXPECT_EQ(ws.front().begin, 0);
    EXPECT_EQ(ws.back().end, static_cast<int64_t>(doc.size()));
    size_t at = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
      const Window& w = ws[i];
      EXPECT_EQ(w.doc, 3);
      EXPECT_EQ(w.ids.front(), 7);
      EXPECT_LE(static_cast<int64_t>(w.ids.size()), window);
      std::vector<uint32_t> text(w.ids.begin() + 1, w.ids.end());
      EXPECT_EQ(tokenizer::decode(tok, text), doc.substr(static_cast<size_t>(w.begin), static_cast<size_t>(w.end - w.begin)));
      for (size_t t = 0; t < text.size(); ++t) EXPECT_EQ(text[t], all[at + t]);
      at += static_cast<size_t>(stride);
    }
    if (window == 1000) {
      EXPECT_EQ(ws.size(), 1u);
    }
  }
  EXPECT_TRUE(cut_windows(tok, enc, "", 0, 16, 15, 7).empty());
}

}  // namespace
}  // namespace slm::embed
