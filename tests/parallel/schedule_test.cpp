// tests/parallel/schedule_test.cpp: pipeline schedules as action lists: exact orders for small
// cases, every list complete and deadlock-free under the executor's semantics (simulator), and
// the simulated bubble equal to the theory for equal stages.
#include <gtest/gtest.h>

#include "parallel/pipeline/schedule.h"
#include "util/error.h"

using namespace slm::parallel::pipeline;

static std::vector<std::vector<Action>> all_ranks(const std::string& s, int P, int M, int v) {
  std::vector<std::vector<Action>> out;
  for (int r = 0; r < P; ++r) out.push_back(schedule_actions(s, P, r, M, v));
  return out;
}

TEST(Schedule, ExactOrders) {
  EXPECT_EQ(to_string(schedule_actions("gpipe", 2, 0, 3, 1), 1), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(to_string(schedule_actions("1f1b", 3, 0, 4, 1), 1), "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(to_string(schedule_actions("1f1b", 3, 2, 4, 1), 1), "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(to_string(schedule_actions("none", 1, 0, 2, 1), 1), "F0 B0 F1 B1");
  // Interleaved, 2 ranks x 2 chunks, 2 micro-batches: rank 0 warms up with (2-0-1)*2 + 2 = 4.
  EXPECT_EQ(to_string(schedule_actions("interleaved", 2, 0, 2, 2), 2), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

TEST(Schedule, CompleteAndDeadlockFree) {
  for (const char* s : {"gpipe", "1f1b"})
    for (int P : {1, 2, 3, 4, 8})
      for (int M : {1, 2, 3, 5, 8, 16}) {
        auto lists = all_ranks(s, P, M, 1);
        for (const auto& l : lists) ASSERT_EQ(l.size(), static_cast<size_t>(2 * M));
        Simulation sim = simulate(lists, 1, 1.0, 2.0);
        ASSERT_FALSE(sim.deadlock) << s << " P=" << P << " M=" << M << ": " << sim.message;
        // Equal stages: every schedule here idles (P-1)(tf+tb) of M(tf+tb) + (P-1)(tf+tb).
        for (double b : sim.bubble) EXPECT_NEAR(b, theoretical_bubble(P, M, 1), 1e-9) << s << P << M;
      }
  for (int P : {2, 3, 4})
    for (int v : {2, 3})
      for (int M : {P, 2 * P, 4 * P}) {
        auto lists = all_ranks("interleaved", P, M, v);
        for (const auto& l : lists) ASSERT_EQ(l.size(), static_cast<size_t>(2 * M * v));
        Simulation sim = simulate(lists, v, 1.0, 2.0);
        ASSERT_FALSE(sim.deadlock) << "P=" << P << " v=" << v << " M=" << M << ": " << sim.message;
        for (double b : sim.bubble) EXPECT_LE(b, theoretical_bubble(P, M, v) + 1e-9);
      }
}

TEST(Schedule, OneFOneBKeepsFewerMicroBatchesInFlight) {
  EXPECT_EQ(simulate(all_ranks("gpipe", 4, 16, 1), 1, 1, 2).max_in_flight, 16);
  EXPECT_EQ(simulate(all_ranks("1f1b", 4, 16, 1), 1, 1, 2).max_in_flight, 4);
}

TEST(Schedule, SimulatorFindsADeadlock) {
  // Both ranks start with a backward that waits for the other's.
  std::vector<std::vector<Action>> bad = {{{Action::F, 0, 0}, {Action::F, 1, 0}, {Action::B, 1, 0}, {Action::B, 0, 0}},
                                          {{Action::B, 0, 0}, {Action::F, 0, 0}, {Action::F, 1, 0}, {Action::B, 1, 0}}};
  Simulation sim = simulate(bad, 1, 1, 2);
  EXPECT_TRUE(sim.deadlock);
  EXPECT_NE(sim.message.find("waits forever at B"), std::string::npos);
}

TEST(Schedule, RejectsBadCombinations) {
  EXPECT_THROW(schedule_actions("zigzag", 2, 0, 4, 1), slm::UserError);
  EXPECT_THROW(schedule_actions("none", 2, 0, 4, 1), slm::UserError);
  EXPECT_THROW(schedule_actions("interleaved", 2, 0, 3, 2), slm::UserError);  // M % P != 0
  EXPECT_THROW(schedule_actions("1f1b", 2, 0, 4, 2), slm::UserError);
}

TEST(Schedule, MaxInFlightMatchesTheActionLists) {
  // The memory estimate counts live forwards without building the lists: same numbers.
  for (const char* name : {"none", "gpipe", "1f1b", "interleaved"})
    for (int P : {1, 2, 3, 4})
      for (int M : {1, 2, 4, 8, 12})
        for (int v : {1, 2, 3}) {
          const std::string n = name;
          if ((n == "interleaved") != (v > 1) || (n == "none" && P > 1) || (n == "interleaved" && (P < 2 || M % P)))
            continue;
          for (int r = 0; r < P; ++r) {
            int live = 0, most = 0;
            for (const Action& a : schedule_actions(n, P, r, M, v)) most = std::max(most, live += a.op == Action::F ? 1 : -1);
            EXPECT_EQ(max_in_flight(n, P, r, M, v), most) << n << " P=" << P << " M=" << M << " v=" << v << " r=" << r;
          }
        }
}

TEST(Schedule, MessagesWaitForTheReceiversNotice) {
  // GPipe, 2 stages, 2 micro-batches; forward 1, backward 2, a transfer 0.5. Without notices the
  // step ends at 10. With a 2-unit notice (Gloo's rendezvous: the receiver posts the receive of
  // action i + 1 when action i's input has arrived and tells the sender, one way): rank 1's F0
  // input leaves at max(1, 0 + 2) and arrives at 2.5; F1's at max(2, 2.5 + 2) + 0.5 = 5; B0 and B1
  // run 6-8, 8-10; rank 0's B0 gradient arrives at max(8, 1 + 2) + 0.5 = 8.5, B1's at
  // max(10, 8.5 + 2) + 0.5 = 11: the step ends at 13.
  const auto lists = all_ranks("gpipe", 2, 2, 1);
  StageCosts c;
  c.fwd = {1, 1}, c.bwd = {2, 2}, c.send_fwd = {0.5, 0}, c.send_bwd = {0, 0.5};
  EXPECT_DOUBLE_EQ(simulate(lists, 1, c).makespan, 10);
  c.notice_fwd = {2, 0}, c.notice_bwd = {0, 2};
  const Simulation sim = simulate(lists, 1, c);
  EXPECT_DOUBLE_EQ(sim.makespan, 13);
  EXPECT_DOUBLE_EQ(sim.finish[1], 10);
  // Receives posted 2 actions ahead (actions 0 and 1 at the start): both of rank 1's inputs leave
  // at 2 and arrive at 2.5, so F0 F1 B0 B1 run 2.5-8.5; rank 0's B0 receive was posted at 0 (F0's
  // start), B1's at 1 (F1's): the gradients arrive at 7 and 9, the step ends at 11.
  c.receives_ahead = 2;
  const Simulation ahead = simulate(lists, 1, c);
  EXPECT_DOUBLE_EQ(ahead.makespan, 11);
  EXPECT_DOUBLE_EQ(ahead.finish[1], 8.5);
  // Rank 1 beginning at 3 (it waited for the last step's gradient norm): its notices leave then,
  // its inputs arrive at 5.5, it ends at 11.5, and rank 0's gradients arrive at 10 and 12.
  c.start = {0, 3};
  const Simulation late = simulate(lists, 1, c);
  EXPECT_DOUBLE_EQ(late.makespan, 14);
  EXPECT_DOUBLE_EQ(late.finish[1], 11.5);
}
