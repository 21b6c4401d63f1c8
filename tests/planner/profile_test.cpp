// tests/planner/profile_test.cpp: the compute profile: interpolation between the timed sizes, the
// file's checks against the model, a pool sharing its cores as a whole, and the compute of a pool's
// ranks pooled (a search then splits identical ranks evenly).
#include <gtest/gtest.h>

#include "parallel/plan.h"
#include "planner/cluster.h"
#include "planner/comm_cost.h"
#include "planner/devices.h"
#include "planner/search.h"
#include "planner/stage_split.h"
#include "planner_test_util.h"
#include "testbed/spec.h"
#include "util/error.h"

namespace slm::planner {
namespace {

using test::make_cluster;
using test::make_model;
using test::make_profile;

TEST(Profile, InterpolatesAndChecksTheModel) {
  EXPECT_DOUBLE_EQ(at_batch({2, 4}, {1.0, 3.0}, 3), 2.0);
  EXPECT_DOUBLE_EQ(at_batch({2, 4}, {1.0, 3.0}, 8), 6.0);  // per sequence of the largest
  EXPECT_DOUBLE_EQ(at_batch({2, 4}, {1.0, 3.0}, 1), 0.5);
  // The least-squares line over 3 sizes or more (exact on a line), else the timings as they are.
  const std::vector<double> exact = line_fit({1, 2, 4}, {2.0, 3.0, 5.0});
  ASSERT_EQ(exact.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(exact[i], (std::vector<double>{2.0, 3.0, 5.0})[i], 1e-12);
  const std::vector<double> fit = line_fit({1, 2, 4, 8}, {2.0, 4.0, 5.0, 9.0});  // 1 + b, 1 s too slow at b = 2
  EXPECT_NEAR(fit[1], 3 + 0.25 + 1.75 * 1.75 / 28.75, 1e-12);  // a quarter of it, and its pull on the slope
  EXPECT_NEAR(fit[0] + fit[1] + fit[2] + fit[3], 2 + 4 + 5 + 9, 1e-12);
  EXPECT_EQ(line_fit({2, 4}, {1.0, 5.0}), (std::vector<double>{1.0, 5.0}));
  EXPECT_EQ(line_fit({1, 2, 4}, {9.0, 1.0, 0.1}), (std::vector<double>{9.0, 1.0, 0.1}));  // the line falls below 0
  ComputeProfile p = make_profile(2, 0.1);
  p.ranks[1].alone_cores = 0.5;
  p.ranks[1].runtime = "OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=10000";
  const ComputeProfile q = parse_profile(profile_to_json(p), "p.json");
  EXPECT_EQ(q.ranks.size(), 2u);
  EXPECT_EQ(q.ranks[1].block_bwd_s, p.ranks[1].block_bwd_s);
  EXPECT_EQ(q.ranks[1].alone_cores, 0.5);
  EXPECT_EQ(q.ranks[1].runtime, p.ranks[1].runtime);  // the settings it was timed under
  EXPECT_EQ(q.ranks[0].runtime, "");                  // a profile from before they were recorded
  ComputeProfile bad = p;
  bad.ranks[1].alone_cores = 0;  // no cores
  EXPECT_THROW(parse_profile(profile_to_json(bad), "p.json"), UserError);
  // A tp pair's times: one per size, or none.
  p.ranks[0].tp2_fwd_s = {0.3, 2.4}, p.ranks[0].tp2_bwd_s = {0.5, 4.0}, p.ranks[0].tp2_alone_s = {0.7, 5.0};
  const ComputeProfile t = parse_profile(profile_to_json(p), "p.json");
  EXPECT_EQ(t.ranks[0].tp2_bwd_s, p.ranks[0].tp2_bwd_s);
  EXPECT_EQ(t.ranks[0].tp2_alone_s, p.ranks[0].tp2_alone_s);
  EXPECT_TRUE(t.ranks[1].tp2_fwd_s.empty());
  auto refused = [&](auto&& spoil) {  // p with rank 0 spoiled, written and read back
    ComputeProfile b = p;
    spoil(b.ranks[0]);
    EXPECT_THROW(parse_profile(profile_to_json(b), "p.json"), UserError);
  };
  refused([](RankProfile& r) { r.tp2_alone_s = {0.7}; });
  refused([](RankProfile& r) { r.tp2_bwd_s.clear(); });
  p.ranks[0].tp2_pipe_fwd_s = {0.4, 3.0}, p.ranks[0].tp2_pipe_bwd_s = {0.6, 4.5};  // timed as pipeline stages
  EXPECT_EQ(parse_profile(profile_to_json(p), "p.json").ranks[0].tp2_pipe_bwd_s, p.ranks[0].tp2_pipe_bwd_s);
  refused([](RankProfile& r) { r.tp2_pipe_bwd_s = {0.6}; });
  refused([](RankProfile& r) { r.tp2_pipe_fwd_s.clear(); });
  EXPECT_NO_THROW(check_profile(q, p.shape, 2, "p.json"));
  ProfileShape other = p.shape;
  other.n_embd = 768;
  try {
    check_profile(q, other, 2, "p.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("p.json was measured for n_embd 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_profile(q, p.shape, 4, "p.json"), UserError);
  EXPECT_THROW(parse_profile("{\"shape\": 1}", "p.json"), UserError);
  EXPECT_THROW(parse_profile("not json", "p.json"), UserError);
}

TEST(Profile, APoolSharesItsCoresAsAWhole) {
  // Four ranks of one 2-core machine, one of whose solo runs came out no faster than all busy (the
  // planner study's 2026-11-27c profiles, three times of five): the pool shares its cores, so
  // every rank of it does; a rank of its own (another host) does not, whatever its solo run says.
  ComputeProfile p = make_profile(5, 0.1);
  const double solo[] = {2.1, 2.4, 1.46, 1.0, 3.0};
  for (size_t r = 0; r < 5; ++r) {
    p.ranks[r].host = r < 4 ? 0 : 1, p.ranks[r].host_ranks = r < 4 ? 4 : 1;
    p.ranks[r].solo_speedup = solo[r], p.ranks[r].shares_cores = solo[r] > kSharesCoresSpeedup;
  }
  const ComputeProfile q = parse_profile(profile_to_json(p), "p.json");
  for (size_t r = 0; r < 4; ++r) EXPECT_TRUE(q.ranks[r].shares_cores) << r;
  EXPECT_FALSE(q.ranks[4].shares_cores);
  // A pool whose ranks are, on average, no faster alone does not share (its cores are enough).
  for (size_t r = 0; r < 4; ++r) p.ranks[r].solo_speedup = r == 0 ? 1.3 : 1.0;
  settle_shared_pools(p.ranks);
  for (size_t r = 0; r < 4; ++r) EXPECT_FALSE(p.ranks[r].shares_cores) << r;
}

TEST(Profile, RanksSharingAPoolsCoresComputeAsTheirMean) {
  ComputeProfile p = make_profile(4, 1.0);
  for (RankProfile& r : p.ranks) r.host_ranks = 3, r.solo_speedup = 2;  // ranks 0-2 share host 0's cores
  p.ranks[1].block_fwd_s = {3.0, 24.0}, p.ranks[1].block_scale = 2;  // in a row: 6 x rank 0's 1
  p.ranks[1].head_fwd_s = {4.0, 32.0}, p.ranks[1].optim_s_per_param = 3e-9, p.ranks[1].comm_cpu_s_per_byte = 1e-9;
  p.ranks[2].device = "another", p.ranks[2].block_fwd_s = {5.0, 40.0};  // host 0 too, another device
  p.ranks[3].host = 1, p.ranks[3].block_fwd_s = {7.0, 56.0};            // another pool
  const ComputeProfile q = parse_profile(profile_to_json(p), "p.json");
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_NEAR(q.ranks[r].block_scale * q.ranks[r].block_fwd_s[0], (1 + 6) / 2.0, 1e-12) << r;
    EXPECT_NEAR(q.ranks[r].block_scale, 1.5, 1e-12) << r;
    EXPECT_NEAR(q.ranks[r].block_scale * q.ranks[r].block_bwd_s[1], (16 + 2 * 16) / 2.0, 1e-12) << r;
    EXPECT_NEAR(q.ranks[r].head_fwd_s[0], 3.0, 1e-12) << r;
    EXPECT_NEAR(q.ranks[r].optim_s_per_param, 2e-9, 1e-21) << r;
  }
  EXPECT_EQ(q.ranks[0].comm_cpu_s_per_byte, 0);  // where a rank sends stays its own
  EXPECT_EQ(q.ranks[1].comm_cpu_s_per_byte, 1e-9);
  EXPECT_EQ(q.ranks[2].block_fwd_s[0], 5.0);
  EXPECT_EQ(q.ranks[3].block_fwd_s[0], 7.0);
  // Ranks that do not share their pool's cores keep their own: what differs there may be the
  // hardware (a profile of the device table likewise).
  ComputeProfile own = p;
  for (RankProfile& r : own.ranks) r.solo_speedup = 1;
  EXPECT_EQ(parse_profile(profile_to_json(own), "own.json").ranks[1].block_fwd_s[0], 3.0);
  ComputeProfile d = p;
  for (RankProfile& r : d.ranks) r.source = "device table";
  EXPECT_EQ(parse_profile(profile_to_json(d), "d.json").ranks[1].block_fwd_s[0], 3.0);
}

TEST(Profile, ASearchSplitsTheLayersOfIdenticalRanksAsIfTheyTimedAlike) {
  // Two sites of two ranks each time-sharing their site's cores, 50 ms apart: one pipeline stage
  // per site. The ranks of site a timed their block 20% apart around the others' (one
  // measurement's scatter): judged rank by rank the slower one's stage gets fewer layers; pooled,
  // the plan is the one for ranks that timed alike.
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.05, 12.5e6});
  ComputeProfile alike = make_profile(4, 0.002);
  alike.shape.n_embd = 256;
  for (size_t r = 0; r < 4; ++r)
    alike.ranks[r].host = static_cast<int>(r / 2), alike.ranks[r].host_ranks = 2, alike.ranks[r].solo_speedup = 2;
  settle_shared_pools(alike.ranks);
  ComputeProfile scattered = alike;
  for (size_t r = 0; r < 2; ++r)
    for (auto* v : {&scattered.ranks[r].block_fwd_s, &scattered.ranks[r].block_bwd_s})
      for (double& t : *v) t *= r == 0 ? 0.8 : 1.2;
  parallel::ModelShape m = make_model(8);
  m.n_embd = 256;
  SearchOptions o;
  o.batch_size = 16, o.micro_batch = 2, o.top = 1, o.subsets = false;
  auto best = [&](const ComputeProfile& p) {
    CostInputs in{&c, &p, m, 16, 25, 0, {}};
    return describe_candidate(search_plans(in, o).top.at(0).c);
  };
  const std::string want = best(alike);
  ASSERT_NE(best(scattered), want);  // rank by rank the scatter moves a layer
  EXPECT_EQ(best(parse_profile(profile_to_json(scattered), "p.json")), want);
}

}  // namespace
}  // namespace slm::planner
