// tests/util/byte_size_test.cpp: a size in MiB from a setting as bytes, held so that 1e308 MiB
// means "all of it" instead of an overflowed (negative) byte count.
#include "util/byte_size.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace slm {
namespace {

TEST(ByteSize, OrdinarySizes) {
  EXPECT_EQ(mib_bytes(25), 25 * 1024 * 1024);
  EXPECT_EQ(mib_bytes(0.5), 512 * 1024);
  EXPECT_EQ(mib_bytes(0), 0);
}

TEST(ByteSize, HugeSizesAreHeldNotWrapped) {
  // 1e308 MiB cast to int64 bytes was undefined (x86: INT64_MIN, a bucket that held nothing).
  for (double mib : {1e308, 1e12, std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity()})
    EXPECT_EQ(mib_bytes(mib), int64_t{1} << 40) << mib;
}

TEST(ByteSize, NegativeAndNanAreZero) {
  EXPECT_EQ(mib_bytes(-1), 0);
  EXPECT_EQ(mib_bytes(std::nan("")), 0);
}

}  // namespace
}  // namespace slm
