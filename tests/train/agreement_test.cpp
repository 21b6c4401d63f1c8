// tests/train/agreement_test.cpp: the steps' agreement: each step's numbers come back in their
// place (one rank: the sum is the rank's own numbers), and the rule that sizes a block of steps.
#include <gtest/gtest.h>

#include "train/agreement.h"

using namespace slm::train;

TEST(Agreement, EachStepsNumbersComeBackInTheirPlace) {
  std::vector<LocalStep> steps(2);
  steps[0].step = 7, steps[0].s.loss = 3.5, steps[0].s.data_s = 0.1, steps[0].s.schedule_s = 0.5,
  steps[0].s.compute_s = 0.4, steps[0].sent = {10, 20, 30, 40};
  steps[1].step = 8, steps[1].s.loss = 3.25, steps[1].s.optim_s = 0.2, steps[1].s.outer_s = 0.05,
  steps[1].wait_s = 0.3, steps[1].paced = true, steps[1].sent = {1, 2, 3, 4};
  Agreement a = begin_agree(steps, /*stop=*/true, /*save_due=*/false, {1, 0}, slm::comm::Group{});
  const Agreed all = finish_agree(a);
  EXPECT_TRUE(all.stop);
  EXPECT_FALSE(all.save);
  EXPECT_EQ(all.ckpt_written, 1);
  EXPECT_EQ(all.ckpt_failed, 0);
  ASSERT_EQ(all.steps.size(), 2u);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[1].step, 8);
  EXPECT_DOUBLE_EQ(all.steps[0].loss, 3.5);
  EXPECT_DOUBLE_EQ(all.steps[0].step_s, 0.6);
  EXPECT_DOUBLE_EQ(all.steps[0].compute_s, 0.4);
  EXPECT_DOUBLE_EQ(all.steps[0].schedule_s, 0.5);
  EXPECT_DOUBLE_EQ(all.steps[0].wait_s, 0);
  EXPECT_DOUBLE_EQ(all.steps[0].bytes_pp, 10);
  EXPECT_DOUBLE_EQ(all.steps[0].bytes_outer, 40);
  EXPECT_DOUBLE_EQ(all.steps[1].loss, 3.25);
  EXPECT_DOUBLE_EQ(all.steps[1].step_s, 0.25);
  EXPECT_DOUBLE_EQ(all.steps[1].wait_s, 0.3);
  EXPECT_DOUBLE_EQ(all.steps[1].paced_wait_s, 0.3);
  EXPECT_DOUBLE_EQ(all.steps[1].bytes_dp, 3);
  ASSERT_EQ(all.peak_mem.size(), 1u);
  EXPECT_GT(all.peak_mem[0], 0);
}

TEST(Agreement, AFlushsWaitDoesNotPaceTheBlocks) {
  std::vector<LocalStep> steps(1);
  steps[0].wait_s = 0.5, steps[0].paced = false;
  Agreement a = begin_agree(steps, false, true, {0, 0}, slm::comm::Group{});
  const Agreed all = finish_agree(a);
  EXPECT_TRUE(all.save);
  EXPECT_DOUBLE_EQ(all.steps[0].wait_s, 0.5);
  EXPECT_DOUBLE_EQ(all.steps[0].paced_wait_s, 0);
}

TEST(Agreement, BlocksGrowToCoverTheAgreementsLatency) {
  // DiLoCo's inner steps at 100 ms RTT on the testbed: 15 ms steps, 0.44 s waited with blocks of 1.
  EXPECT_EQ(steps_per_agreement(1, 0.015, 0.44), 38);  // ceil(1.25 * 0.455 / 0.015 = 37.9)
  // A pipeline: 0.32 s steps, 0.1 s waited: latency 0.42 s -> ceil(1.64) = 2.
  EXPECT_EQ(steps_per_agreement(1, 0.32, 0.1), 2);
  // Waits up to 5% of the block are left alone (jitter), above it the block grows by at least one.
  EXPECT_EQ(steps_per_agreement(3, 0.1, 0.015), 3);
  EXPECT_EQ(steps_per_agreement(3, 0.1, 0.016), 4);
  EXPECT_EQ(steps_per_agreement(10, 1.0, 0.6), 14);  // ceil(1.25 * 10.6)
  // No wait: unchanged, never shrinks.
  EXPECT_EQ(steps_per_agreement(5, 1.0, 0), 5);
  EXPECT_EQ(steps_per_agreement(5, 0.001, 0), 5);
  // Bounded.
  EXPECT_EQ(steps_per_agreement(1, 0.001, 10), kMaxStepsPerAgreement);
  EXPECT_EQ(steps_per_agreement(1, 0, 0.1), kMaxStepsPerAgreement);
  EXPECT_EQ(steps_per_agreement(kMaxStepsPerAgreement, 0.01, 1), kMaxStepsPerAgreement);
}
