// tests/embed/windows_test.cpp: documents cut into windows: each starts with the end-of-text token,
// holds at most `window` tokens, its byte range spells exactly its tokens, consecutive windows
// start `stride` tokens apart and the last reaches the document's end.
#include "embed/windows.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/bpe_train.h"
#include "util/utf8.h"

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

// Byte-level BPE splits characters its vocabulary has not merged (here, with only 300 tokens, most
// CJK ones): a window's own range then begins or ends inside one, and the range an index entry
// keeps is widened to whole characters, so its text is valid UTF-8 holding the window's bytes.
TEST(Windows, EntryRangesHoldWholeCharacters) {
  tokenizer::TrainOptions opt;
  opt.vocab_size = 300;
  const tokenizer::BpeModel tok = tokenizer::train_bpe(tokenizer::count_words({test::sample_text()}, 2), opt);
  tokenizer::Encoder enc(tok);
  const std::string doc = "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAF\xE6\x97\xA5\xE6\x9C\xAC\xE3\x81\xAE"
                          "\xE9\xA6\x96\xE9\x83\xBD caf\xC3\xA9 \xF0\x9F\x99\x82 na\xC3\xAFve";  // 東京は日本の首都 café 🙂 naïve
  int split = 0;
  for (const Window& w : cut_windows(tok, enc, doc, 0, 4, 1, 7)) {
    const std::string_view own = std::string_view(doc).substr(static_cast<size_t>(w.begin), static_cast<size_t>(w.end - w.begin));
    split += !utf8_valid(own);
    const auto [begin, end] = whole_characters(doc, w.begin, w.end);
    EXPECT_LE(begin, w.begin);
    EXPECT_GE(end, w.end);
    EXPECT_LE(w.begin - begin, 3);
    EXPECT_LE(end - w.end, 3);
    EXPECT_TRUE(utf8_valid(std::string_view(doc).substr(static_cast<size_t>(begin), static_cast<size_t>(end - begin))))
        << w.begin << ".." << w.end << " -> " << begin << ".." << end;
  }
  EXPECT_GT(split, 0) << "no window split a character: the test shows nothing";
  EXPECT_EQ(whole_characters("abc", 1, 2), (std::pair<int64_t, int64_t>{1, 2}));
}

}  // namespace
}  // namespace slm::embed
