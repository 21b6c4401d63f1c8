// tests/planner/comm_cost_test.cpp: α-β transfers and ring collectives against hand-computed
// values: the worked all-reduce, hop latencies as the probe measured them, the small all-reduce as
// Gloo runs it, and the ring's slow hop and site crossings.
#include <gtest/gtest.h>

#include "parallel/plan.h"
#include "planner/cluster.h"
#include "planner/comm_cost.h"
#include "planner/devices.h"
#include "planner/stage_split.h"
#include "planner_test_util.h"
#include "testbed/spec.h"
#include "util/error.h"

namespace slm::planner {
namespace {

using test::make_cluster;

TEST(CommCost, RingAllReduceMatchesTheWorkedExample) {
  const Link wan{0.05, 125e6};  // 50 ms one way, 1 Gbit/s
  // 2(P-1) α + 2(P-1)/P · n / min(β, window / α)
  EXPECT_NEAR(ring_all_reduce_s(4, wan, 100e6), 6 * 0.05 + 1.5 * 100e6 / (kWindowBytes / 0.05), 1e-9);
  EXPECT_NEAR(ring_all_reduce_s(4, wan, 100e6, 8), 6 * 0.05 + 1.5 * 100e6 / 125e6, 1e-9);  // 8 channels fill it
  EXPECT_NEAR(ring_all_reduce_s(4, wan, 100e6, 8, 2), 6 * 0.05 + 1.5 * 100e6 / 62.5e6, 1e-9);  // two rings share it
  EXPECT_NEAR(ring_all_gather_s(4, wan, 100e6), 3 * 0.05 + 0.75 * 100e6 / 125e6, 1e-9);  // no window
  EXPECT_NEAR(ring_all_gather_s(4, wan, 100e6, 1, 2), 3 * 0.05 + 0.75 * 100e6 / 62.5e6, 1e-9);
  EXPECT_NEAR(p2p_s({0.01, 1e9}, 1e6), 0.01 + 1e6 / 1e9, 1e-12);  // one message: no window either
  EXPECT_NEAR(p2p_s(wan, 4e6, 2), 0.05 + 4e6 / 62.5e6, 1e-12);     // two transfers share the link
  EXPECT_EQ(ring_all_reduce_s(1, wan, 1e6), 0);
}

// Where the probe timed a link, a message takes the time measured at its size: over the testbed's
// 100 ms link 256 KiB took 2α (108 ms), where the fit's α + bytes/β says 54 ms.
TEST(CommCost, PointToPointTakesTheProbesMeasuredTimes) {
  Link wan{0.05, 125e6};
  EXPECT_NEAR(one_way_s(wan, 262144), 0.05 + 262144 / 125e6, 1e-12);  // not probed: the line
  wan.one_way = {{4, 0.0502}, {262144, 0.108}, {2097152, 0.107}};
  EXPECT_NEAR(p2p_s(wan, 1), 0.0502, 1e-12);  // below the smallest size: its time
  EXPECT_NEAR(p2p_s(wan, 4), 0.0502, 1e-12);
  EXPECT_NEAR(p2p_s(wan, (4 + 262144) / 2.0), (0.0502 + 0.108) / 2, 1e-12);  // between two sizes
  EXPECT_NEAR(p2p_s(wan, 262144), 0.108, 1e-12);
  EXPECT_NEAR(p2p_s(wan, 1179648), 0.1075, 1e-12);
  EXPECT_NEAR(p2p_s(wan, 4194304), 0.107 + 2097152 / 125e6, 1e-12);  // past the largest: its bytes at β
  EXPECT_NEAR(p2p_s(wan, 262144, 2), 0.108 + 262144 / 125e6, 1e-12);  // sharing: the other flow's bytes
}

TEST(CommCost, HopLatencyAsTheProbeMeasuredIt) {
  // A 4-rank ring over a 10 ms link at 125 MB/s: the probe's 1 MiB all-reduce took 133 ms, so a hop
  // cost (133 ms - 1.5 MiB at min(β, window / α)) / 6; its all-gather took 66 ms: (66 ms - 0.75 MiB
  // at β) / 3; a 4 B all-reduce 61 ms: α per hop (the least a hop may cost).
  const Link wan{0.010, 125e6};
  const double MiB = 1048576, ar = (0.133 - 1.5 * MiB / (kWindowBytes / 0.010)) / 6;
  EXPECT_NEAR(fit_hop_latency_s(true, 4, wan, MiB, 0.133), ar, 1e-12);
  EXPECT_NEAR(fit_hop_latency_s(false, 4, wan, MiB, 0.066), (0.066 - 0.75 * MiB / 125e6) / 3, 1e-12);
  EXPECT_NEAR(fit_hop_latency_s(true, 4, wan, 4, 0.050), 0.010, 1e-12);
  // Used on that link (α within 25%), log-interpolated between 4 B and 1 MiB, constant above;
  // another link keeps its α.
  const HopLatency h{0.010, ar};
  EXPECT_NEAR(hop_latency_s(wan, h, 0.010, 4), 0.010, 1e-12);
  EXPECT_NEAR(hop_latency_s(wan, h, 0.010, 2048), 0.010 + 0.5 * (ar - 0.010), 1e-12);  // 2048 = sqrt(4 MiB)
  EXPECT_NEAR(hop_latency_s(wan, h, 0.010, 64 * MiB), ar, 1e-12);
  EXPECT_NEAR(hop_latency_s({0.0122, 125e6}, h, 0.010, MiB), ar, 1e-12);
  EXPECT_NEAR(hop_latency_s({0.0001, 1e9}, h, 0.010, MiB), 0.0001, 1e-12);
  EXPECT_NEAR(hop_latency_s(wan, HopLatency{}, 0.010, MiB), 0.010, 1e-12);  // not measured
  EXPECT_NEAR(ring_all_reduce_s(4, wan, MiB, 1, 1, ar), 0.133, 1e-9);      // the probe's time again
}

TEST(CommCost, SmallAllReduceAsGlooRunsIt) {
  // One double over 4 ranks in 2 sites 50 ms apart (1e-4 inside): a lap of the ring's one-way
  // latencies and back to all but rank 1: 2 (2 x 0.05 + 2e-4) - 1e-4 (measured on the testbed:
  // 101, 202, 151, 151 ms per rank, the last 4 hops after the last arrival).
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.05, 1e8});
  EXPECT_NEAR(small_all_reduce_s(c, {0, 1, 2, 3}), 2 * (0.1 + 2e-4) - 1e-4, 1e-12);
  // Two ranks, one per site: 3 one-way latencies (measured 101 and 151 ms).
  const Cluster two = make_cluster({1, 1}, {1e-4, 1e9}, {0.05, 1e8});
  EXPECT_NEAR(small_all_reduce_s(two, {0, 1}), 3 * 0.05, 1e-12);
  // Four sites of one rank: 7 (measured 201-352 ms); a group inside one site; one rank.
  const Cluster four = make_cluster({1, 1, 1, 1}, {1e-4, 1e9}, {0.05, 1e8});
  EXPECT_NEAR(small_all_reduce_s(four, {0, 1, 2, 3}), 7 * 0.05, 1e-12);
  EXPECT_NEAR(small_all_reduce_s(c, {2, 3}), 3e-4, 1e-12);
  EXPECT_EQ(small_all_reduce_s(c, {2}), 0);
}

TEST(CommCost, RingLinksFindTheSlowHopAndSiteCrossings) {
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.02, 1e8});
  RingLinks r = ring_links(c, {0, 1, 2, 3});
  EXPECT_TRUE(r.crosses_sites);
  EXPECT_EQ(r.site_edges, 2);  // 1 -> 2 and 3 -> 0
  EXPECT_DOUBLE_EQ(r.slowest.alpha_s, 0.02);
  r = ring_links(c, {2, 3});
  EXPECT_FALSE(r.crosses_sites);
  EXPECT_DOUBLE_EQ(r.slowest.alpha_s, 1e-4);
  // The largest α and the smallest β, from different edges where they differ (a slow-starting but
  // fast link inside a site, a quick but narrow one between sites).
  const Cluster d = make_cluster({2, 2}, {6e-4, 7e9}, {1e-4, 9e7});
  r = ring_links(d, {0, 1, 2, 3});
  EXPECT_DOUBLE_EQ(r.slowest.alpha_s, 6e-4);
  EXPECT_DOUBLE_EQ(r.slowest.beta_Bps, 9e7);
}

}  // namespace
}  // namespace slm::planner
