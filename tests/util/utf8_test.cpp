// tests/util/utf8_test.cpp: character boundaries, validity and repair as a conforming decoder
// (Python's errors="replace") has them, and width-limited prefixes that never split a character.
#include "util/utf8.h"

#include <gtest/gtest.h>

namespace slm {
namespace {

const std::string kCafe = "caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x99\x82";  // "café 東京 🙂"

TEST(Utf8, CharacterBoundaries) {
  // é is bytes 3-4, 東 6-8, 京 9-11, 🙂 13-16.
  EXPECT_EQ(utf8_char_start(kCafe, 4), 3u);
  EXPECT_EQ(utf8_char_start(kCafe, 3), 3u);
  EXPECT_EQ(utf8_char_start(kCafe, 8), 6u);
  EXPECT_EQ(utf8_char_start(kCafe, 16), 13u);
  EXPECT_EQ(utf8_char_start(kCafe, kCafe.size()), kCafe.size());
  EXPECT_EQ(utf8_char_end(kCafe, 4), 5u);
  EXPECT_EQ(utf8_char_end(kCafe, 7), 9u);
  EXPECT_EQ(utf8_char_end(kCafe, 14), 17u);
  EXPECT_EQ(utf8_char_end(kCafe, 5), 5u);
  EXPECT_EQ(utf8_char_end(kCafe, 0), 0u);
  // A run of stray continuation bytes moves at most 3 bytes.
  const std::string stray(8, '\x80');
  EXPECT_EQ(utf8_char_start(stray, 6), 3u);
  EXPECT_EQ(utf8_char_end(stray, 2), 5u);
}

TEST(Utf8, ValidityAndRepair) {
  EXPECT_TRUE(utf8_valid(kCafe));
  EXPECT_TRUE(utf8_valid(""));
  EXPECT_EQ(utf8_repair(kCafe), kCafe);
  const std::string fffd = "\xEF\xBF\xBD";
  // As Python's bytes.decode("utf-8", "replace"): one U+FFFD per maximal ill-formed subpart.
  EXPECT_EQ(utf8_repair("a\xC3"), "a" + fffd);                                // truncated at the end
  EXPECT_EQ(utf8_repair("\xA9 x"), fffd + " x");                              // stray continuation
  EXPECT_EQ(utf8_repair("\xE6\x9D" "a"), fffd + "a");                         // truncated 3-byte form
  EXPECT_EQ(utf8_repair("\xC0\xAF"), fffd + fffd);                            // overlong '/'
  EXPECT_EQ(utf8_repair("\xED\xA0\x80"), fffd + fffd + fffd);                 // a surrogate
  EXPECT_EQ(utf8_repair("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);      // above U+10FFFF
  EXPECT_EQ(utf8_repair("\xF0\x9F\x99"), fffd);                               // 3 of 4 bytes
  EXPECT_EQ(utf8_repair(std::string("\xFF\0b", 3)), fffd + std::string("\0b", 2));
  for (const char* bad : {"a\xC3", "\xA9", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF"}) {
    EXPECT_FALSE(utf8_valid(bad)) << bad;
    EXPECT_TRUE(utf8_valid(utf8_repair(bad))) << bad;
  }
}

TEST(Utf8, PrefixEndsOnACharacterBoundary) {
  EXPECT_EQ(utf8_prefix(kCafe, 100), kCafe);
  EXPECT_EQ(utf8_prefix(kCafe, 4), "caf");
  EXPECT_EQ(utf8_prefix(kCafe, 5), "caf\xC3\xA9");
  EXPECT_EQ(utf8_prefix(kCafe, 8), "caf\xC3\xA9 ");
  EXPECT_EQ(utf8_prefix(kCafe, 16), "caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC ");
  for (size_t n = 0; n <= kCafe.size(); ++n) EXPECT_TRUE(utf8_valid(utf8_prefix(kCafe, n))) << n;
}

}  // namespace
}  // namespace slm
