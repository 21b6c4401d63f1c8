// tests/util/wait_time_test.cpp: a time in seconds from a setting as milliseconds and deadlines, held so
// that 1e308 s means "wait as long as it takes" instead of an overflowed (negative) timeout.
#include "util/wait_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

namespace slm {
namespace {

TEST(WaitTime, MillisecondsOfOrdinaryTimes) {
  EXPECT_EQ(wait_ms(60).count(), 60000);
  EXPECT_EQ(wait_ms(0.25).count(), 250);
  EXPECT_EQ(wait_ms(0).count(), 0);
}

TEST(WaitTime, HugeTimesAreHeldNotWrapped) {
  // 1e308 s cast to int64 milliseconds was undefined (x86: INT64_MIN, a timeout already past).
  for (double s : {1e308, 1e12, std::numeric_limits<double>::max()}) {
    EXPECT_EQ(wait_ms(s).count(), static_cast<int64_t>(kMaxWaitS * 1000)) << s;
    // c10d turns the milliseconds into the steady clock's nanoseconds and adds them to now.
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait_ms(s));
    EXPECT_GT((std::chrono::steady_clock::now() + ns).time_since_epoch().count(), 0) << s;
    EXPECT_GT(deadline_after(s), std::chrono::steady_clock::now() + std::chrono::hours(24 * 365)) << s;
  }
}

TEST(WaitTime, NegativeAndNotANumberAreNoWait) {
  EXPECT_EQ(wait_ms(-5).count(), 0);
  EXPECT_EQ(wait_ms(-1e308).count(), 0);
  EXPECT_EQ(wait_ms(std::nan("")).count(), 0);
  const auto past = deadline_after(-1e308);
  EXPECT_LE(past, std::chrono::steady_clock::now());
}

}  // namespace
}  // namespace slm
