// tests/train/precision_test.cpp: dynamic loss scaling follows GradScaler's rules; precision
// choices and their errors.
#include <gtest/gtest.h>

#include "train/precision.h"
#include "util/error.h"

using slm::train::LossScaler;
using slm::train::update_loss_scale;

TEST(LossScale, BacksOffOnOverflowAndGrowsAfterInterval) {
  LossScaler s;
  s.enabled = true;
  s.scale = 1024;
  s.growth_interval = 3;
  EXPECT_FALSE(update_loss_scale(s, false));  // overflow: skip, halve
  EXPECT_EQ(s.scale, 512);
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_EQ(s.scale, 512);
  EXPECT_TRUE(update_loss_scale(s, true));  // third good step in a row: double
  EXPECT_EQ(s.scale, 1024);
  EXPECT_FALSE(update_loss_scale(s, false));
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_EQ(s.scale, 512);  // the count restarted after the overflow
}

TEST(LossScale, NeverBelowOne) {
  LossScaler s;
  s.enabled = true;
  s.scale = 1;
  EXPECT_FALSE(update_loss_scale(s, false));
  EXPECT_EQ(s.scale, 1);
}

TEST(LossScale, DisabledStillSkipsNonFiniteSteps) {
  LossScaler s;
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_FALSE(update_loss_scale(s, false));
  EXPECT_EQ(s.scale, 65536);
}

TEST(Precision, Fp16NeedsCuda) {
  std::string why;
  EXPECT_THROW(slm::train::resolve_precision("fp16", "cpu", &why), slm::UserError);
  EXPECT_EQ(slm::train::resolve_precision("fp32", "cpu", &why), "fp32");
}
