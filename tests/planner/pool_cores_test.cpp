// tests/planner/pool_cores_test.cpp: a machine's CPU pools held to the cores it has
// (planner/pool_cores.h): scaled into the machine's bounds, in proportion, and left as measured
// where the machine's facts do not allow it.
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/pool_cores.h"
#include "planner_test_util.h"

namespace slm::planner {
namespace {

// Rank r in pool hosts[r] of machine 0, with solo speed-up solos[r]; a pool's host_ranks its size.
std::vector<RankProfile> ranks_in(const std::vector<int>& hosts, const std::vector<double>& solos) {
  std::vector<RankProfile> ranks = test::make_profile(static_cast<int>(hosts.size()), 0.1).ranks;
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].host = hosts[r], ranks[r].machine = 0, ranks[r].solo_speedup = solos[r];
    ranks[r].host_ranks = static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[r]));
  }
  return ranks;
}

double pool_cores(const std::vector<RankProfile>& ranks, int host) {
  double n = 0, alone = 0, speedup = 0;
  for (const RankProfile& r : ranks)
    if (r.host == host) ++n, alone += r.alone_cores, speedup += r.solo_speedup;
  return n * (alone / n) / (speedup / n);
}

TEST(PoolCores, OnePoolOfSingleThreadRanksHasTheMachinesCpus) {
  // The testbed of 4 ranks on 2 CPUs: a profile whose solo runs came out 3.03x faster on average
  // (1.32 cores) and one at 1.75x (2.29 cores) both become 2 cores.
  const std::vector<CpuFacts> facts(4, CpuFacts{2, 2, 1, 0});
  std::vector<RankProfile> high = ranks_in({0, 0, 0, 0}, {3.13, 3.21, 2.29, 3.49});
  const std::vector<std::string> lines = fit_pool_cores(high, facts);
  EXPECT_NEAR(pool_cores(high, 0), 2.0, 1e-9);
  for (const RankProfile& r : high) EXPECT_NEAR(r.solo_speedup, 2.0, 1e-9);  // the pool's, as a whole
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("1.32 cores as measured, fitted to 2.00"), std::string::npos) << lines[0];
  std::vector<RankProfile> low = ranks_in({0, 0, 0, 0}, {1.5, 1.6, 1.8, 2.1});
  fit_pool_cores(low, facts);
  EXPECT_NEAR(pool_cores(low, 0), 2.0, 1e-9);
}

TEST(PoolCores, AQuotasPoolKeepsToItsQuotaAndTheOtherHasTheRest) {
  // het20: site a's 2 ranks without a quota, site b's 2 at 0.5 cores, one machine of 2 CPUs, as
  // profiled: a at 1.65 cores, b at 0.63 (more than its quota); and a profile of both slow (a at
  // 1.1). b is held to its 0.5, a has the rest of the 2 CPUs.
  std::vector<CpuFacts> facts(4, CpuFacts{2, 2, 1, 0});
  facts[2].quota_cores = facts[3].quota_cores = 0.5;
  for (const std::vector<double>& solos : {std::vector<double>{1.29, 1.13, 1.61, 1.55}, std::vector<double>{1.8, 1.8, 2.1, 2.1}}) {
    std::vector<RankProfile> ranks = ranks_in({0, 0, 1, 1}, solos);
    ranks[2].alone_cores = ranks[3].alone_cores = 0.5;
    fit_pool_cores(ranks, facts);
    EXPECT_NEAR(pool_cores(ranks, 1), 0.5, 1e-9) << solos[0];
    EXPECT_NEAR(pool_cores(ranks, 0), 1.5, 1e-9) << solos[0];
  }
}

TEST(PoolCores, HyperthreadsLeaveRoomBetweenCoresAndCpus) {
  // 2 CPUs on 1 core: anything from 1 to 2 cores is possible and kept; below 1 is not.
  const std::vector<CpuFacts> facts(4, CpuFacts{2, 1, 1, 0});
  std::vector<RankProfile> within = ranks_in({0, 0, 0, 0}, {2.7, 2.7, 2.7, 2.7});
  EXPECT_TRUE(fit_pool_cores(within, facts).empty());
  EXPECT_DOUBLE_EQ(within[0].solo_speedup, 2.7);
  std::vector<RankProfile> below = ranks_in({0, 0, 0, 0}, {5, 5, 5, 5});
  fit_pool_cores(below, facts);
  EXPECT_NEAR(pool_cores(below, 0), 1.0, 1e-9);
}

TEST(PoolCores, RanksWithCoresOfTheirOwnAreNoFasterAlone) {
  // 2 single-thread ranks on 4 CPUs: each has a core whether the other runs or not.
  std::vector<RankProfile> ranks = ranks_in({0, 0}, {1.3, 1.2});
  fit_pool_cores(ranks, std::vector<CpuFacts>(2, CpuFacts{4, 4, 1, 0}));
  EXPECT_DOUBLE_EQ(ranks[0].solo_speedup, 1.0);
  EXPECT_DOUBLE_EQ(ranks[1].solo_speedup, 1.0);
}

TEST(PoolCores, LeftAsMeasuredWhereTheMachineDoesNotSay) {
  const std::vector<double> solos{3.13, 3.21, 2.29, 3.49};
  for (const CpuFacts& odd : {CpuFacts{2, 2, 2, 0},     // threads of more than one: cores unknown
                              CpuFacts{2, 2, 0, 0},     // a GPU rank
                              CpuFacts{0, 0, 1, 0},     // not seen
                              CpuFacts{4, 4, 1, 0}}) {  // a rank that saw other CPUs than the rest
    std::vector<RankProfile> ranks = ranks_in({0, 0, 0, 0}, solos);
    std::vector<CpuFacts> facts(4, CpuFacts{2, 2, 1, 0});
    facts[1] = odd;
    EXPECT_TRUE(fit_pool_cores(ranks, facts).empty());
    for (size_t r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(ranks[r].solo_speedup, solos[r]);
  }
}

TEST(PoolCores, EachMachineOnItsOwn) {
  // Two machines of 2 CPUs, a pool of 4 ranks on each; only the second's profile was off.
  std::vector<RankProfile> ranks = ranks_in({0, 0, 0, 0, 1, 1, 1, 1}, {2, 2, 2, 2, 3, 3, 3, 3});
  for (size_t r = 4; r < 8; ++r) ranks[r].machine = 1;
  EXPECT_EQ(fit_pool_cores(ranks, std::vector<CpuFacts>(8, CpuFacts{2, 2, 1, 0})).size(), 1u);
  EXPECT_DOUBLE_EQ(ranks[0].solo_speedup, 2.0);
  EXPECT_NEAR(ranks[4].solo_speedup, 2.0, 1e-9);
}

}  // namespace
}  // namespace slm::planner
