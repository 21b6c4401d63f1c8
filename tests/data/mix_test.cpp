// tests/data/mix_test.cpp: data.mix's form: entries, shares and their sum, and one-line errors.
#include "data/mix.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace slm::data {

TEST(ParseMix, EntriesAndShares) {
  EXPECT_TRUE(parse_mix("").empty());
  EXPECT_TRUE(parse_mix("  ").empty());
  const std::vector<MixEntry> m = parse_mix("data/code=0.25, data/a=b = 0.1");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].dir, "data/code");
  EXPECT_DOUBLE_EQ(m[0].share, 0.25);
  EXPECT_EQ(m[1].dir, "data/a=b");  // the last '=' separates the share
  EXPECT_DOUBLE_EQ(m[1].share, 0.1);
}

TEST(ParseMix, OneLineErrors) {
  const auto message = [](const std::string& text) {
    try {
      parse_mix(text);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("data/code"), "data: mix entry \"data/code\" is not DIR=SHARE (e.g. \"data/code=0.25\")");
  EXPECT_EQ(message("data/code=x"), "data: mix entry \"data/code=x\" is not DIR=SHARE (e.g. \"data/code=0.25\")");
  EXPECT_EQ(message("a=0.2,"), "data: mix entry \"\" is not DIR=SHARE (e.g. \"data/code=0.25\")");
  EXPECT_EQ(message("=0.2"), "data: mix entry \"=0.2\" is not DIR=SHARE (e.g. \"data/code=0.25\")");
  EXPECT_EQ(message("a=0"), "data: mix share of a is 0; a share lies between 0 and 1");
  EXPECT_EQ(message("a=1.5"), "data: mix share of a is 1.5; a share lies between 0 and 1");
  EXPECT_EQ(message("a=nan"), "data: mix share of a is nan; a share lies between 0 and 1");
  EXPECT_EQ(message("a=0.6, b=0.4"),
            "data: the mix's shares sum to 1; data.dir takes the rest, so they must sum to less than 1");
}

}  // namespace slm::data
