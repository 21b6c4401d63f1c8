// tests/util/progress_test.cpp: progress output when stderr is not a terminal (as under CTest).
#include "util/progress.h"

#include <gtest/gtest.h>

#include <cmath>

namespace slm {

TEST(Progress, PlainLinesWithRateAndEta) {
  testing::internal::CaptureStderr();
  {
    Progress p("encode", 2'000'000, "B");
    p.add(1'000'000);
    p.add(1'000'000);
    p.finish();
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("encode: 100.0% 2.0 MB of 2.0 MB"), std::string::npos) << err;
  EXPECT_NE(err.find("MB/s"), std::string::npos);
  EXPECT_NE(err.find("eta"), std::string::npos);
  EXPECT_EQ(err.find('\r'), std::string::npos);  // no terminal redraws in logs
}

TEST(Progress, UnfinishedPrintsNoFinalLine) {  // an error is unwinding: no misleading 100%
  testing::internal::CaptureStderr();
  {
    Progress p("x", 10, "items");
    p.add(10);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("100.0%"), std::string::npos);
}

TEST(Progress, QuietPrintsNothing) {
  testing::internal::CaptureStderr();
  {
    Progress p("x", 10, "items", /*quiet=*/true);
    p.add(10);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Progress, DurationsOfAnySize) {
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  // A run of 2^40 steps has an estimate beyond an int's seconds (the cast was undefined); no
  // estimate (NaN, negative) reads as none.
  EXPECT_EQ(format_duration(2.27e11), "63055555h33m");
  EXPECT_EQ(format_duration(1e308), "277777777h46m");
  EXPECT_EQ(format_duration(std::nan("")), "0m00s");
  EXPECT_EQ(format_duration(-5), "0m00s");
}

}  // namespace slm
