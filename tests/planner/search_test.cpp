// tests/planner/search_test.cpp: the search finds the known optimum in small synthetic cases: the
// stage boundary on the site boundary over a 100 ms link, a memory cap forcing pipelines or
// ZeRO-3, a 3x slower site getting fewer layers or fewer sequences, a far slow site left out, the
// cost objective, the study's heuristic, and a one-line error when nothing fits or when there are
// more ranks than the global batch has sequences for.
#include <gtest/gtest.h>

#include "planner/search.h"
#include "planner_test_util.h"
#include "util/error.h"

namespace slm::planner {
namespace {

using test::make_cluster;
using test::make_model;
using test::make_profile;

SearchOptions opts(int64_t batch) {
  SearchOptions o;
  o.batch_size = batch, o.micro_batch = 2, o.top = 3;
  return o;
}

TEST(Search, StageBoundaryOnTheSlowLink) {
  // 2 sites x 2 ranks, 50 ms one way at 100 Mbit/s: gradients of every layer must not cross it.
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.05, 12.5e6});
  const ComputeProfile prof = make_profile(4, 0.002);
  parallel::ModelShape m = make_model(8);
  m.n_embd = 256;
  ComputeProfile p = prof;
  p.shape.n_embd = 256;
  CostInputs in{&c, &p, m, 16, 25, 0, {}};
  SearchOptions o = opts(16);
  o.subsets = false;
  const SearchResult r = search_plans(in, o);
  const Candidate& best = r.top.at(0).c;
  ASSERT_EQ(best.plan.pp, 2) << describe_candidate(best);
  for (size_t k = 0; k < best.plan.stages.size(); ++k)
    for (int pr : best.plan.stages[k].ranks)
      EXPECT_EQ(c.ranks[static_cast<size_t>(best.ranks[static_cast<size_t>(pr)])].site, static_cast<int>(k % 2))
          << describe_candidate(best);
  EXPECT_FALSE(r.losers.empty());
  EXPECT_GT(r.evaluated, 20);
}

TEST(Search, MemoryCapForcesPipelineOrZero3) {
  const Cluster big = make_cluster({4}, {1e-4, 1e9}, {});
  const ComputeProfile prof = make_profile(4, 0.01);
  parallel::ModelShape m = make_model(8);
  CostInputs in{&big, &prof, m, 16, 25, 0, {}};
  // The cap sits between what data parallelism needs and what ZeRO-3 or a 4-stage pipeline needs.
  parallel::Plan dp = parallel::plan_from_flags({.dp = 4}, 8, 4, 8, 2);
  dp.zero = 2;
  const double dp_need = parallel::estimate_memory(dp, m, 16, 0).total();
  in.memory_cap_gb = dp_need * 0.8 / (1024.0 * 1024 * 1024);
  const SearchResult r = search_plans(in, opts(8));
  const Candidate& best = r.top.at(0).c;
  EXPECT_TRUE(best.plan.pp > 1 || best.plan.zero == 3 || best.plan.stages[0].tp > 1) << describe_candidate(best);
  EXPECT_TRUE(r.top[0].p.fits);
  bool dp_lost_on_memory = false;
  for (const Loser& l : r.losers)
    if (l.family == "dp 4 on a" || l.family == "dp 4, ZeRO-2 on a")
      dp_lost_on_memory = dp_lost_on_memory || l.why.find("out of memory") == 0;
  EXPECT_TRUE(dp_lost_on_memory);
}

// A tp layout saves activation memory with sequence parallelism (no extra compute) and, where
// that does not fit either, with recomputation: under a cap between tp 2's need and its need with
// sequence parallelism (at the smallest micro-batch), the search offers tp 2 with sequence
// parallelism and not with recomputation; under a cap below that, tp 2 with recomputation.
TEST(Search, TpSavesMemoryBySequenceParallelismThenRecomputation) {
  const Cluster c = make_cluster({2}, {1e-4, 1e9}, {});
  const ComputeProfile prof = make_profile(2, 0.01);
  const parallel::ModelShape m = make_model(8);
  CostInputs in{&c, &prof, m, 16, 25, 0, {}};
  parallel::ModelShape sp = m, rc = m;
  sp.sequence_parallel = true, rc.recompute = true;
  const parallel::Plan tp = parallel::plan_from_flags({.tp = 2}, 8, 2, 8, 1);
  const double plain = parallel::estimate_memory(tp, m, 16, 0).total();
  const double split = parallel::estimate_memory(tp, sp, 16, 0).total();
  const double rerun = parallel::estimate_memory(tp, rc, 16, 0).total();
  ASSERT_LT(split, plain);
  ASSERT_LT(rerun, split);
  SearchOptions o = opts(8);
  o.top = 1000;
  const double GiB = 1024.0 * 1024 * 1024;
  in.memory_cap_gb = (plain + split) / 2 / GiB;
  bool tp_sp_fits = false;
  for (const Ranked& k : search_plans(in, o).top) {
    const bool with_tp = k.c.plan.stages[0].tp > 1;
    EXPECT_FALSE(with_tp && k.c.recompute) << describe_candidate(k.c);
    EXPECT_TRUE(with_tp || !k.c.sequence_parallel) << describe_candidate(k.c);
    EXPECT_TRUE(!with_tp || k.c.sequence_parallel || !k.p.fits) << describe_candidate(k.c);
    tp_sp_fits = tp_sp_fits || (with_tp && k.c.sequence_parallel && k.p.fits);
    if (with_tp && k.c.sequence_parallel) {
      EXPECT_NE(describe_candidate(k.c).find(", sequence parallel"), std::string::npos) << describe_candidate(k.c);
    }
  }
  EXPECT_TRUE(tp_sp_fits);
  in.memory_cap_gb = (split + rerun) / 2 / GiB;
  bool tp_rc_fits = false;
  for (const Ranked& k : search_plans(in, o).top)
    tp_rc_fits = tp_rc_fits || (k.c.plan.stages[0].tp > 1 && k.c.recompute && k.p.fits);
  EXPECT_TRUE(tp_rc_fits);
}

// ZeRO-3 combines with tp (one stage): dp 2 x tp 2 with ZeRO 3 is among the candidates on 4 ranks.
TEST(Search, OffersZeroThreeWithTp) {
  const Cluster c = make_cluster({4}, {1e-4, 1e9}, {});
  const ComputeProfile prof = make_profile(4, 0.01);
  CostInputs in{&c, &prof, make_model(8), 16, 25, 0, {}};
  SearchOptions o = opts(8);
  o.top = 1000;
  bool found = false;
  for (const Ranked& k : search_plans(in, o).top)
    found = found || (k.c.plan.pp == 1 && k.c.plan.stages[0].tp == 2 && k.c.plan.zero == 3 && k.p.fits);
  EXPECT_TRUE(found);
}

// With pipeline stages ZeRO 3 is costed where no ZeRO 2 variant fits: under a cap between what
// pp 2 x dp 4 needs per rank with ZeRO 3 and with ZeRO 2 (32 layers: each stage shards 16 blocks),
// it is among the candidates, and pp 2 x dp 4 with ZeRO 2 is not.
TEST(Search, OffersZeroThreeWithStagesWhereZeroTwoDoesNotFit) {
  const Cluster c = make_cluster({8}, {1e-4, 1e9}, {});
  const ComputeProfile prof = make_profile(8, 0.01);
  const parallel::ModelShape m = make_model(32);
  CostInputs in{&c, &prof, m, 16, 25, 0, {}};
  parallel::Plan p = parallel::plan_from_flags({.dp = 4, .pp = 2}, 32, 8, 8, 1);
  double z2 = 0, z3 = 0;  // the stages' largest needs
  for (int r : {0, 7}) {
    p.zero = 2, z2 = std::max(z2, parallel::estimate_memory(p, m, 16, r).total());
    p.zero = 3, z3 = std::max(z3, parallel::estimate_memory(p, m, 16, r).total());
  }
  ASSERT_LT(z3, z2 * 0.8);
  in.memory_cap_gb = z3 * 1.05 / (1024.0 * 1024 * 1024);
  SearchOptions o = opts(8);
  o.top = 1000;
  bool zero3 = false, zero2 = false;
  for (const Ranked& k : search_plans(in, o).top) {
    if (k.c.plan.pp != 2 || k.c.plan.dp != 4 || !k.p.fits) continue;
    zero3 = zero3 || k.c.plan.zero == 3;
    zero2 = zero2 || k.c.plan.zero == 2;
  }
  EXPECT_TRUE(zero3);
  EXPECT_FALSE(zero2);
}

TEST(Search, SlowerSiteGetsLessWork) {
  // Site b computes 3x slower; fast links. Whatever the layout, b's share must shrink.
  const Cluster c = make_cluster({1, 1}, {1e-4, 1e9}, {1e-4, 1e9});
  const ComputeProfile prof = make_profile(2, 0.01, {1.0, 3.0});
  CostInputs in{&c, &prof, make_model(8), 16, 25, 0, {}};
  SearchOptions o = opts(16);
  o.subsets = false;
  const SearchResult r = search_plans(in, o);
  const parallel::Plan& p = r.top.at(0).c.plan;
  if (p.pp == 2) {
    EXPECT_LT(p.stages[1].end - p.stages[1].first, p.stages[0].end - p.stages[0].first) << describe_candidate(r.top[0].c);
  } else {
    ASSERT_EQ(p.dp, 2);
    EXPECT_LT(p.micro_batch[1], p.micro_batch[0]) << describe_candidate(r.top[0].c);
  }
  // Even splits are predicted slower than the pick.
  Candidate even;
  even.ranks = {0, 1};
  even.plan = parallel::plan_from_flags({.dp = 2}, 8, 2, 16, 8);
  EXPECT_GT(predict(even, in).step_s, r.top[0].p.step_s * 1.2);
}

TEST(Search, FarSlowSiteIsLeftOut) {
  // Site b: one rank 10x slower, 100 ms and 10 Mbit/s away. Using it only costs time.
  const Cluster c = make_cluster({2, 1}, {1e-4, 1e9}, {0.1, 1.25e6});
  const ComputeProfile prof = make_profile(3, 0.01, {1.0, 1.0, 10.0});
  CostInputs in{&c, &prof, make_model(4), 16, 25, 0, {}};
  const SearchResult r = search_plans(in, opts(8));
  EXPECT_EQ(r.top.at(0).c.ranks, (std::vector<int>{0, 1})) << describe_candidate(r.top[0].c);
  EXPECT_EQ(sites_used(c, r.top[0].c.ranks), "a");
}

TEST(Search, KeepRankKeepsItsSite) {
  // Site a is the slow, far one and holds rank 0: training (rank 0 hosts the store) must keep it.
  const Cluster c = make_cluster({1, 2}, {1e-4, 1e9}, {0.1, 1.25e6});
  const ComputeProfile prof = make_profile(3, 0.01, {10.0, 1.0, 1.0});
  CostInputs in{&c, &prof, make_model(4), 16, 25, 0, {}};
  SearchOptions o = opts(8);
  EXPECT_EQ(search_plans(in, o).top.at(0).c.ranks, (std::vector<int>{1, 2}));
  o.keep_rank = 0;
  const SearchResult r = search_plans(in, o);
  for (const Ranked& k : r.top) EXPECT_EQ(k.c.ranks.at(0), 0) << describe_candidate(k.c);
}

TEST(Search, CostObjectivePrefersTheCheaperRanks) {
  // Two equal one-rank sites, b four times the price: for tokens per dollar, b alone loses to a alone.
  Cluster c = make_cluster({1, 1}, {1e-4, 1e9}, {0.05, 12.5e6});
  c.ranks[1].price_per_hour = 4;
  const ComputeProfile prof = make_profile(2, 0.01);
  CostInputs in{&c, &prof, make_model(4), 16, 25, 0, {}};
  SearchOptions o = opts(8);
  o.objective = "cost";
  const SearchResult r = search_plans(in, o);
  EXPECT_EQ(r.top.at(0).c.ranks, (std::vector<int>{0}));
  for (size_t i = 1; i < r.top.size(); ++i) EXPECT_GE(r.top[0].p.tokens_per_dollar, r.top[i].p.tokens_per_dollar);
}

TEST(Search, LossyOptionsOnlyWhenAllowed) {
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.05, 12.5e6});
  const ComputeProfile prof = make_profile(4, 0.01);
  CostInputs in{&c, &prof, make_model(4), 16, 25, 0, {}};
  SearchOptions o = opts(8);
  o.top = 1000;
  for (const Ranked& k : search_plans(in, o).top) EXPECT_FALSE(k.c.compress);
  o.allow_lossy = true;
  bool any = false;
  for (const Ranked& k : search_plans(in, o).top) any = any || k.c.compress;
  EXPECT_TRUE(any);
}

TEST(Search, NothingFitsNamesTheTightestRank) {
  const Cluster c = make_cluster({2}, {1e-4, 1e9}, {}, /*memory_gb=*/1e-5);
  const ComputeProfile prof = make_profile(2, 0.01);
  CostInputs in{&c, &prof, make_model(2), 16, 25, 0, {}};
  try {
    search_plans(in, opts(4));
    FAIL();
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("plan auto: no layout fits; the closest"), std::string::npos) << m;
    EXPECT_NE(m.find("on rank"), std::string::npos) << m;
    EXPECT_NE(m.find("over its"), std::string::npos) << m;
  }
}

// More ranks than the global batch has sequences for: one line each, not "micro_batches 0" (the
// heuristic) or a crash (the search, when no layout was possible at all).
TEST(Search, MoreRanksThanTheBatchIsOneLine) {
  const ComputeProfile prof = make_profile(1000, 0.01);
  const Cluster many = make_cluster({1000}, {1e-4, 1e9}, {});
  CostInputs in{&many, &prof, make_model(4), 16, 25, 0, {}};
  try {
    study_heuristic(in, opts(16));
    FAIL() << "the heuristic planned 1000 replicas of a batch of 16";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("plan auto: the global batch 16 is smaller than the 1000 ranks", 0), 0u) << e.what();
  }
  try {
    search_plans(in, opts(16));
    FAIL() << "the search planned 1000 ranks for a batch of 16";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("plan auto: no layout of the 1000 ranks fits the global batch 16", 0), 0u) << e.what();
  }
}

TEST(Search, StudyHeuristic) {
  const ComputeProfile prof = make_profile(4, 0.01);
  const Cluster one = make_cluster({4}, {1e-4, 1e9}, {});
  CostInputs in{&one, &prof, make_model(4), 16, 25, 0, {}};
  Ranked h = study_heuristic(in, opts(8));
  EXPECT_EQ(h.c.plan.dp, 4);
  EXPECT_EQ(h.c.plan.pp, 1);
  const Cluster two = make_cluster({2, 2}, {1e-4, 1e9}, {0.01, 1e8});
  in.cluster = &two;
  h = study_heuristic(in, opts(8));
  EXPECT_EQ(h.c.plan.pp, 2);
  EXPECT_EQ(h.c.plan.stages[0].tp, 2);
  EXPECT_EQ(h.c.plan.micro_batches, 4);
  EXPECT_GT(h.p.step_s, 0);
}

}  // namespace
}  // namespace slm::planner

namespace slm::planner {
namespace {

TEST(Search, DilocoOnlyWhenLossyAllowedAndItPays) {
  // 2 sites x 2 ranks over 50 ms / 100 Mbit/s, a model whose gradients take seconds to cross:
  // DiLoCo (H = 50, int8) wins when allowed, with ~1/(H x 4 x 2) of hierarchical dp's bytes.
  const Cluster c = make_cluster({2, 2}, {1e-4, 1e9}, {0.05, 12.5e6});
  ComputeProfile p = make_profile(4, 0.002);
  parallel::ModelShape m = make_model(8);
  m.n_embd = 256;
  p.shape.n_embd = 256;
  CostInputs in{&c, &p, m, 16, 25, 0, {}};
  SearchOptions o = opts(16);
  o.subsets = false;
  SearchResult r = search_plans(in, o);
  for (const Ranked& k : r.top) EXPECT_EQ(k.c.diloco_steps, 0) << describe_candidate(k.c);
  o.allow_lossy = true;
  r = search_plans(in, o);
  const Ranked& best = r.top.at(0);
  ASSERT_EQ(best.c.diloco_steps, 50) << describe_candidate(best.c);
  EXPECT_NO_THROW(parallel::replica_sites(best.c.plan, 2));
  EXPECT_GT(best.p.outer_sync_s, 0);
  // The same structure with a hierarchical all-reduce every step instead.
  Candidate h = best.c;
  h.diloco_steps = 0, h.plan.zero = 0;
  const Prediction ph = predict(h, in);
  EXPECT_LT(best.p.step_s, ph.step_s);
  EXPECT_LT(best.p.cross_site_bytes * 100, ph.cross_site_bytes) << best.p.cross_site_bytes << " vs " << ph.cross_site_bytes;
  EXPECT_NE(describe_candidate(best.c).find("DiLoCo"), std::string::npos);
  // ZeRO 3 inside the sites is a candidate too (one-stage replicas without tp, 2 per site), and
  // never with one replica per site (nothing to shard).
  o.top = 100000;
  r = search_plans(in, o);
  bool z3 = false;
  for (const Ranked& k : r.top) {
    if (k.c.diloco_steps == 0 || k.c.plan.zero != 3) continue;
    z3 = true;
    EXPECT_EQ(k.c.plan.pp, 1);
    EXPECT_EQ(k.c.plan.dp, 4) << describe_candidate(k.c);
  }
  EXPECT_TRUE(z3);
}

}  // namespace
}  // namespace slm::planner
