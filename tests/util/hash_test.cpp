// tests/util/hash_test.cpp: content identities (hex) and the numbers ranks compare strings by.
#include "util/hash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace slm {
namespace {

TEST(Hash, HexIsStableAndDependsOnEveryByte) {
  EXPECT_EQ(hash_hex("abc").size(), 32u);
  EXPECT_EQ(hash_hex("abc"), hash_hex(std::string("abc")));
  EXPECT_NE(hash_hex("abc"), hash_hex("abd"));
  EXPECT_NE(hash_hex(std::string("a\0b", 3)), hash_hex(std::string("a\0c", 3)));
}

TEST(Hash, NumberIsExactInADoubleNeverZeroAndTellsTextsApart) {
  std::set<double> seen;
  for (int i = 0; i < 10000; ++i) {
    const double h = hash_number("node-" + std::to_string(i) + "|/sys/fs/cgroup/site" + std::to_string(i % 7));
    EXPECT_GE(h, 1.0);
    EXPECT_LE(h, std::ldexp(1.0, 50));
    EXPECT_EQ(h, std::floor(h));                         // an integer, so a sum of one rank's and zeros is exact
    EXPECT_EQ(h, static_cast<double>(static_cast<uint64_t>(h)));
    seen.insert(h);
  }
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_EQ(hash_number("host|a"), hash_number(std::string("host|") + "a"));
  EXPECT_GE(hash_number(""), 1.0);  // 0 stays free for "none"
}

}  // namespace
}  // namespace slm
