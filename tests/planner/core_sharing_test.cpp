// tests/planner/core_sharing_test.cpp: the pipeline simulation where ranks time-share cores
// (planner/core_sharing.h) against hand-computed schedules: without pools it is the fixed-cost
// simulator, a rank alone in its pool runs at its solo speed, ranks busy together at the profile's,
// waits free the cores, a stalled rank is named; and the cost model's pipelines use it.
#include <gtest/gtest.h>

#include "parallel/plan.h"
#include "planner/core_sharing.h"
#include "planner_test_util.h"

namespace slm::planner {
namespace {

using parallel::pipeline::Action;
using parallel::pipeline::schedule_actions;

std::vector<std::vector<Action>> lists(const std::string& schedule, int P, int M) {
  std::vector<std::vector<Action>> out;
  for (int r = 0; r < P; ++r) out.push_back(schedule_actions(schedule, P, r, M, 1));
  return out;
}

// A replica whose stages cost fwd / bwd (all CPU work), sends and notices as given, in `pools`.
SharedReplica replica(std::vector<double> fwd, std::vector<double> bwd, double send, double notice,
                      std::vector<std::vector<std::pair<int, double>>> pools) {
  SharedReplica r;
  const size_t S = fwd.size();
  r.time.fwd = fwd, r.time.bwd = bwd;
  r.time.send_fwd.assign(S, send), r.time.send_bwd.assign(S, send);
  r.time.send_fwd[S - 1] = 0, r.time.send_bwd[0] = 0;
  r.time.notice_fwd.assign(S, notice), r.time.notice_bwd.assign(S, notice);
  r.cpu_fwd = fwd, r.cpu_bwd = bwd;
  r.pools = pools;
  return r;
}

TEST(CoreSharing, WithoutPoolsItIsTheFixedCostSimulator) {
  const auto l = lists("1f1b", 4, 6);
  const SharedReplica r = replica({0.3, 0.2, 0.25, 0.4}, {0.6, 0.5, 0.45, 0.9}, 0.05, 0.02, {{}, {}, {}, {}});
  const auto fixed = parallel::pipeline::simulate(l, 1, r.time);
  const SharedSimulation s = simulate_sharing(l, 1, {r}, {});
  ASSERT_FALSE(s.deadlock);
  EXPECT_NEAR(s.makespan, fixed.makespan, 1e-9);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(s.finish[0][static_cast<size_t>(k)], fixed.finish[static_cast<size_t>(k)], 1e-9);
    EXPECT_NEAR(1 - s.busy[0][static_cast<size_t>(k)] / s.makespan, fixed.bubble[static_cast<size_t>(k)], 1e-9);
  }
  // The same with Gloo's notices, receives posted 3 actions ahead and ranks that begin late.
  SharedReplica w = r;
  w.time.notice_fwd = {0.5, 0.5, 0.5, 0}, w.time.notice_bwd = {0, 0.5, 0.5, 0.5};
  w.time.receives_ahead = 3, w.time.start = {0, 1, 2, 3};
  const auto wf = parallel::pipeline::simulate(l, 1, w.time);
  const SharedSimulation ws = simulate_sharing(l, 1, {w}, {});
  EXPECT_GT(wf.makespan, fixed.makespan);
  EXPECT_NEAR(ws.makespan, wf.makespan, 1e-9);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(ws.finish[0][static_cast<size_t>(k)], wf.finish[static_cast<size_t>(k)], 1e-9);
}

TEST(CoreSharing, ARankAloneRunsAtItsSoloSpeed) {
  // Two stages on two ranks that share cores (alone each is 2x faster; 1.5x in the second case):
  // with one micro-batch only one computes at a time, so the whole schedule runs at solo speed.
  const auto l = lists("1f1b", 2, 1);
  const SharedReplica r = replica({1, 1}, {2, 2}, 0, 0, {{{0, 1.0}}, {{0, 1.0}}});
  EXPECT_NEAR(simulate_sharing(l, 1, {r}, {{2, 2}}).makespan, 6.0 / 2, 1e-9);
  EXPECT_NEAR(simulate_sharing(l, 1, {r}, {{2, 1.5}}).makespan, 6.0 / 1.5, 1e-9);
  // A pool of four ranks (speed-up 3) with two computing: each at 4 / 2 = 2x.
  const SharedReplica two = replica({1}, {1}, 0, 0, {{{0, 1.0}}});
  const SharedSimulation s = simulate_sharing(lists("none", 1, 1), 1, {two, two}, {{4, 3}});
  EXPECT_NEAR(s.makespan, 1.0, 1e-9);
}

TEST(CoreSharing, WhoFinishesFirstFreesTheCores) {
  // Two replicas of one stage in a pool of 2 (2x alone): both busy at the profile's speed until
  // replica 0's 2 s of work end at 2 s, replica 1's remaining 2 s then run 2x: done at 3 s.
  const auto l = lists("none", 1, 1);
  const SharedReplica a = replica({1}, {1}, 0, 0, {{{0, 1.0}}}), b = replica({2}, {2}, 0, 0, {{{0, 1.0}}});
  const SharedSimulation s = simulate_sharing(l, 1, {a, b}, {{2, 2}});
  EXPECT_NEAR(s.finish[0][0], 2.0, 1e-9);
  EXPECT_NEAR(s.finish[1][0], 3.0, 1e-9);
  EXPECT_NEAR(s.busy[1][0], 3.0, 1e-9);
  // Waiting (a link, a lockstep) is not CPU work: replica 0's 2 s are all wait, so replica 1
  // computes alone, at 2x, from the start.
  SharedReplica waits = a;
  waits.cpu_fwd = {0}, waits.cpu_bwd = {0};
  const SharedSimulation w = simulate_sharing(l, 1, {waits, b}, {{2, 2}});
  EXPECT_NEAR(w.finish[0][0], 2.0, 1e-9);
  EXPECT_NEAR(w.finish[1][0], 2.0, 1e-9);
}

TEST(CoreSharing, FourStagesOnTwoCoresAreSlowerThanTheMeanRate) {
  // 1F1B over 4 ranks sharing 2 cores (2x alone), 4 micro-batches: the warm-up runs one stage at
  // a time, so the schedule takes longer than its work at the mean busy rate (the old factor).
  const auto l = lists("1f1b", 4, 4);
  const std::vector<std::pair<int, double>> in0{{0, 1.0}};
  const SharedReplica r = replica({1, 1, 1, 1}, {2, 2, 2, 2}, 0, 0, {in0, in0, in0, in0});
  const auto fixed = parallel::pipeline::simulate(l, 1, r.time);
  double busy = 0;
  for (double b : fixed.bubble) busy += 1 - b;
  const double mean_rate = std::max(busy / 4, 0.5) * fixed.makespan;  // the busy-ranks factor
  const SharedSimulation s = simulate_sharing(l, 1, {r}, {{4, 2}});
  EXPECT_GT(s.makespan, 1.05 * mean_rate);
  EXPECT_GE(s.makespan, 4 * 4 * 3 / 2.0 / 2);  // the work (all busy: rate 1 each) over 2 cores
  EXPECT_LT(s.makespan, fixed.makespan);
}

TEST(CoreSharing, AStalledRankIsNamed) {
  std::vector<std::vector<Action>> l = {{}, {Action{Action::F, 0, 0}, Action{Action::B, 0, 0}}};
  const SharedReplica r = replica({1, 1}, {1, 1}, 0, 0, {{}, {}});
  const SharedSimulation s = simulate_sharing(l, 1, {r}, {});
  EXPECT_TRUE(s.deadlock);
  EXPECT_NE(s.message.find("rank 1"), std::string::npos) << s.message;
  ASSERT_EQ(s.finish.size(), 1u);  // sized as without the deadlock: callers index it
  EXPECT_EQ(s.finish[0].size(), 2u);
  EXPECT_EQ(s.busy[0].size(), 2u);
}

TEST(CoreSharing, TheCostModelsPipelinesUseIt) {
  // pp 2 on one machine's two ranks (2x alone), one micro-batch: one stage computes at a time, at
  // solo speed: half the schedule on ranks of their own.
  const Cluster c = test::make_cluster({2}, {1e-9, 1e12}, {});
  ComputeProfile prof = test::make_profile(2, 0.1);
  CostInputs in{&c, &prof, test::make_model(2), 16, 25, 0, {}};
  Candidate k;
  k.ranks = {0, 1};
  k.plan = parallel::plan_from_flags({.pp = 2, .micro_batches = 1, .schedule = "gpipe"}, 2, 2, 1, 1);
  const double alone = predict(k, in).pipeline_s;
  test::share_one_pool(prof, 2);
  EXPECT_NEAR(predict(k, in).pipeline_s, alone / 2, 1e-6);
}

}  // namespace
}  // namespace slm::planner
