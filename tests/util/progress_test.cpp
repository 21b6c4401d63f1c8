// tests/util/progress_test.cpp: progress output when stderr is not a terminal (as under CTest).
#include "util/progress.h"

#include <gtest/gtest.h>

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

}  // namespace slm
