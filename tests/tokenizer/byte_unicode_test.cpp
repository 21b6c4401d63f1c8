// tests/tokenizer/byte_unicode_test.cpp: GPT-2's byte <-> unicode alphabet.
#include "tokenizer/byte_unicode.h"

#include <gtest/gtest.h>

#include <set>

namespace slm::tokenizer {

TEST(ByteUnicode, MatchesGpt2Table) {
  const auto& t = byte_to_unicode();
  EXPECT_EQ(t['A'], "A");
  EXPECT_EQ(t['!'], "!");
  EXPECT_EQ(t[' '], "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(t['\n'], "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(t[0], "\xC4\x80");     // U+0100 'Ā'
  EXPECT_EQ(t[0xAD], "\xC5\x83");  // soft hyphen is not printable: U+0143
  std::set<std::string> uniq(t.begin(), t.end());
  EXPECT_EQ(uniq.size(), 256u);
  // GPT-2's vocab.json order: '!' is id 0, '~' id 93, then U+00A1...
  EXPECT_EQ(base_byte_order()[0], '!');
  EXPECT_EQ(base_byte_order()[93], '~');
  EXPECT_EQ(base_byte_order()[94], 0xA1);
  EXPECT_EQ(base_byte_order()[188], 0);  // first non-printable byte
}

TEST(ByteUnicode, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  auto back = unicode_str_to_bytes(bytes_to_unicode_str(all));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, all);
  EXPECT_FALSE(unicode_str_to_bytes("\xE6\x9D\xB1").has_value());  // a CJK char: not in alphabet
  EXPECT_FALSE(unicode_str_to_bytes(" ").has_value());             // raw space is not either
}

}  // namespace slm::tokenizer
