// tests/parallel/plan_test.cpp: plans: presets from flags, TOML round trip, validation errors
// (one line naming the problem), rank roles, memory estimate against the ZeRO formulas, per-rank
// memory caps.
#include <gtest/gtest.h>

#include <limits>

#include "parallel/plan.h"
#include "util/error.h"

using namespace slm::parallel;

static const ModelShape kModel{8, 4, 64, 512, 64, false};

static std::string error_of(const Plan& p, int world) {
  try {
    validate_plan(p, kModel, world);
  } catch (const slm::UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, PresetFromFlags) {
  PlanFlags f;
  f.tp = 2, f.pp = 2;
  Plan p = plan_from_flags(f, 8, 8, 32, 4);
  EXPECT_EQ(p.dp, 2);
  EXPECT_EQ(p.schedule, "1f1b");
  EXPECT_EQ(p.micro_batches, 4);  // 32 / (4 * 2)
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(p.stages[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.stages[1].first, 4);
  EXPECT_EQ(error_of(p, 8), "");
  RankRole r = role_of(p, 6);  // stage 1, replica 1, tp rank 0
  EXPECT_EQ(r.pipe, 1);
  EXPECT_EQ(r.replica, 1);
  EXPECT_EQ(r.tp_rank, 0);
  EXPECT_EQ(rank_at(p, 1, 1, 1), 7);
  f = {};
  f.pp = 3;  // 8 layers over 3 stages: 3, 3, 2
  p = plan_from_flags(f, 8, 3, 8, 2);
  EXPECT_EQ(p.stages[2].first, 6);
  f.virtual_stages = 2;
  p = plan_from_flags(f, 8, 3, 12, 2);
  EXPECT_EQ(p.schedule, "interleaved");
  EXPECT_EQ(p.stages.size(), 6u);
  EXPECT_EQ(p.stages[4].ranks, p.stages[1].ranks);
  EXPECT_EQ(role_of(p, 1).stages, (std::vector<int>{1, 4}));
  try {
    f = {};
    f.tp = 3;
    plan_from_flags(f, 8, 8, 32, 4);
    FAIL();
  } catch (const slm::UserError& e) {
    EXPECT_STREQ(e.what(), "parallel: tp(3)*pp(1) = 3 does not divide the world size 8");
  }
}

// An elastic restart on fewer (or more) ranks keeps what still fits and keeps the global batch.
TEST(Plan, FitToWorldAfterAnElasticRestart) {
  std::string changed;
  const auto any = [](const PlanFlags&) { return true; };
  PlanFlags f;
  f.dp = 2, f.pp = 2, f.micro_batches = 2;
  PlanFlags g = fit_to_world(f, 4, 8, any, &changed);  // fits: unchanged
  EXPECT_TRUE(changed.empty());
  EXPECT_EQ(g.dp, 2);
  g = fit_to_world(f, 2, 8, any, &changed);  // half the ranks: the pipeline stays, one replica
  EXPECT_EQ(changed, "dp 2 x tp 1 x pp 2 does not fit 2 ranks; going on with dp 1 x tp 1 x pp 2 (the even preset, "
                     "the same global batch)");
  EXPECT_EQ(g.pp, 2);
  EXPECT_EQ(g.dp, -1);
  EXPECT_EQ(g.micro_batches, 0);
  EXPECT_EQ(plan_from_flags(g, 8, 2, 16, 4).global_batch(), 16);
  f = PlanFlags{};
  f.tp = 2, f.pp = 4, f.virtual_stages = 2, f.schedule = "interleaved";
  g = fit_to_world(f, 6, 8, any, &changed);  // tp 2 x pp 4 on 6 ranks: tp 2, pp 3, still 2 chunks per rank
  EXPECT_EQ(g.tp, 2);
  EXPECT_EQ(g.pp, 3);
  EXPECT_EQ(g.virtual_stages, 2);
  EXPECT_EQ(g.schedule, "auto");
  g = fit_to_world(f, 6, 4, any, &changed);  // 3 x 2 chunks do not fit 4 layers: interleaving dropped
  EXPECT_EQ(g.virtual_stages, 1);
  g = fit_to_world(f, 3, 8, any, &changed);  // odd world: no tp
  EXPECT_EQ(g.tp, 1);
  EXPECT_EQ(g.pp, 3);
  EXPECT_EQ(plan_from_flags(g, 8, 3, 12, 4).stages.size(), 6u);
  // Memory: dp 4 with ZeRO 3 comes back on 2 ranks; dp 2 would not fit, so the pipeline deepens
  // (ZeRO 3 becomes 2: one replica has nothing to shard).
  f = PlanFlags{};
  f.dp = 4, f.zero = 3;
  const auto deep = [](const PlanFlags& p) { return p.pp >= 2; };
  g = fit_to_world(f, 2, 8, deep, &changed);
  EXPECT_EQ(g.pp, 2);
  EXPECT_EQ(g.zero, 2);
  EXPECT_EQ(changed, "dp 4 x tp 1 x pp 1, ZeRO 3 does not fit 2 ranks; going on with dp 1 x tp 1 x pp 2, ZeRO 2 (the "
                     "even preset that fits the memory caps, the same global batch)");
  f.dp = -1;  // follows the world, but 2 ranks need more memory each
  g = fit_to_world(f, 2, 8, deep, &changed);
  EXPECT_EQ(g.pp, 2);
  EXPECT_EQ(changed, "dp 2 x tp 1 x pp 1, ZeRO 3 does not fit 2 ranks within the memory caps; going on with dp 1 x tp "
                     "1 x pp 2, ZeRO 2 (the even preset that fits the memory caps, the same global batch)");
  const auto none = [](const PlanFlags&) { return false; };
  g = fit_to_world(f, 2, 8, none, &changed);  // nothing fits: unchanged, the memory check will say why
  EXPECT_EQ(g.pp, 1);
  EXPECT_TRUE(changed.empty());
  f.dp = 4;
  g = fit_to_world(f, 2, 8, none, &changed);  // nothing fits: at least the world
  EXPECT_EQ(g.pp, 1);
  EXPECT_EQ(g.dp, -1);
  EXPECT_EQ(changed, "dp 4 x tp 1 x pp 1, ZeRO 3 does not fit 2 ranks; going on with dp 2 x tp 1 x pp 1, ZeRO 3 (the "
                     "even preset, the same global batch)");
}

TEST(Plan, TomlRoundTripAndUneven) {
  const std::string text = R"(schedule = "gpipe"
micro_batches = 4
micro_batch = [3, 1]
[[stage]]
layers = [0, 3]
ranks = [0, 1]
[[stage]]
layers = [3, 6]
tp = 2
ranks = [2, 3, 4, 5]
[[stage]]
layers = [6, 8]
ranks = [6, 7]
)";
  Plan p = parse_plan(text, "x.toml");
  EXPECT_EQ(p.zero, -1);  // not set: the run's parallel.zero
  p.zero = 1;
  EXPECT_EQ(p.dp, 2);
  EXPECT_EQ(p.pp, 3);
  EXPECT_EQ(p.global_batch(), 16);
  EXPECT_EQ(error_of(p, 8), "");
  Plan q = parse_plan(plan_to_toml(p), "y.toml");
  EXPECT_EQ(plan_to_toml(q), plan_to_toml(p));
  // Uneven micro-batches: replica 1's rank in the last stage keeps fewer activations.
  EXPECT_LT(estimate_memory(p, kModel, 64, 7).activations, estimate_memory(p, kModel, 64, 6).activations);
  EXPECT_NE(describe_plan(p, kModel, 64).find("stage 1: layers 3-5, tp 2, ranks per replica [2,3] [4,5]"),
            std::string::npos);
}

TEST(Plan, OneLineErrors) {
  auto bad = [](const std::string& text) {
    try {
      parse_plan(text, "p.toml");
    } catch (const slm::UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(bad("micro_batch = [1]\nfoo = 1\n[[stage]]\nlayers = [0, 8]\nranks = [0]\n"), "p.toml: unknown key 'foo'");
  EXPECT_EQ(bad("micro_batch = [1]\n"), "p.toml: no [[stage]] tables");
  EXPECT_EQ(bad("micro_batch = [1]\n[[stage]]\nlayers = [0]\nranks = [0]\n"), "p.toml: stage 0: 'layers' must be [first, end)");
  EXPECT_NE(bad("micro_batch = [1\n").find("p.toml:"), std::string::npos);
  // Integers within a setting's range: an int no longer keeps the low 32 bits of what was written
  // (tp = 2^32 + 2 was tp 2), and sizes whose product passes int64 give an impossible batch.
  const std::string stage = "\n[[stage]]\nlayers = [0, 8]\nranks = [0]\n";
  EXPECT_EQ(bad("micro_batch = [1]\n[[stage]]\nlayers = [0, 8]\ntp = 4294967298\nranks = [0]\n"),
            "p.toml: stage 0: 'tp' must be an integer between -2147483647 and 2147483647 (got 4294967298)");
  EXPECT_EQ(bad("micro_batch = [1]\nzero = -9223372036854775808" + stage),
            "p.toml: 'zero' must be an integer between -2147483647 and 2147483647 (got -9223372036854775808)");
  EXPECT_EQ(bad("micro_batch = [1, 9223372036854775807]" + stage),
            "p.toml: 'micro_batch' must be an integer between -1099511627776 and 1099511627776 (got "
            "9223372036854775807)");
  const Plan huge =
      parse_plan("micro_batches = 1099511627776\nmicro_batch = [1099511627776, 1099511627776]" + stage, "p.toml");
  EXPECT_EQ(huge.global_batch(), std::numeric_limits<int64_t>::max());

  PlanFlags f;
  f.pp = 2;
  Plan p = plan_from_flags(f, 8, 2, 8, 2);
  Plan q = p;
  q.stages[1].first = 5;
  EXPECT_EQ(error_of(q, 2), "plan: stage 1 covers layers [5, 8) but must start at layer 4 and hold at least one");
  q = p;
  q.stages[1].ranks = {0};
  EXPECT_EQ(error_of(q, 2), "plan: rank 0 is in stage 0 and stage 1");
  q = p;
  q.stages[1].tp = 3, q.stages[1].ranks = {1, 2, 3};
  EXPECT_EQ(error_of(q, 4), "plan: stage 1: tp(3) must divide model.n_head(4)");
  q = p;
  q.stages[1].tp = 2, q.stages[1].ranks = {1, 2};
  EXPECT_EQ(error_of(q, 3), "plan: first and last stage share the tied embedding and need the same tp (1 vs 2)");
  EXPECT_EQ(error_of(p, 3), "plan: rank 2 of 3 is in no stage");
  q = p;
  q.stages[1].end = 7;
  EXPECT_EQ(error_of(q, 2), "plan: the stages cover 7 layers, the model has 8");
}

TEST(Plan, MemoryEstimateFollowsZeroAndStages) {
  PlanFlags f;
  f.dp = 4;
  Plan dp = plan_from_flags(f, 8, 4, 16, 1);
  const double P = 8 * (12.0 * 64 * 64 + 13 * 64) + 512 * 64 + 64 * 64 + 2 * 64;  // every parameter
  MemoryEstimate e0 = estimate_memory(dp, kModel, 64, 0);
  EXPECT_DOUBLE_EQ(e0.params + e0.grads + e0.optimizer, 16 * P);
  dp.zero = 2;
  MemoryEstimate e2 = estimate_memory(dp, kModel, 64, 0);
  EXPECT_DOUBLE_EQ(e2.params + e2.grads + e2.optimizer, 4 * P + 12 * P / 4);
  dp.zero_ranks_per_site = 2;  // hybrid sharding: 2 sites of 2, state split over 2 ranks only
  EXPECT_EQ(zero_shards(dp, 3), 2);
  MemoryEstimate h = estimate_memory(dp, kModel, 64, 3);
  EXPECT_DOUBLE_EQ(h.params + h.grads + h.optimizer, 4 * P + 12 * P / 2);
  dp.zero_ranks_per_site = 3;  // uneven sites (3 + 1): ZeRO over all replicas, as the runtime does
  EXPECT_EQ(zero_shards(dp, 0), 4);
  dp.zero_ranks_per_site = 4;  // one site
  EXPECT_EQ(zero_shards(dp, 0), 4);
  dp.zero_ranks_per_site = 0;
  dp.zero = 3;  // parameters sharded too; the embeddings and up to two blocks gathered
  MemoryEstimate e3 = estimate_memory(dp, kModel, 64, 0);
  const double block = 12.0 * 64 * 64 + 13 * 64, kept = 512 * 64 + 64 * 64 + 2 * 64;
  EXPECT_DOUBLE_EQ(e3.params, 4 * (P / 4 + kept + 2 * block));
  EXPECT_DOUBLE_EQ(e3.grads, 4 * (P / 4 + kept + block));  // the kept units' gradients for the step
  EXPECT_LT(e3.activations, e2.activations);  // blocks are recomputed in backward
  dp.zero = 0;
  f = {};
  f.pp = 4;
  Plan pp = plan_from_flags(f, 8, 4, 16, 1);
  double sum = 0;
  for (int r = 0; r < 4; ++r) sum += estimate_memory(pp, kModel, 64, r).params;
  EXPECT_DOUBLE_EQ(sum, 4 * (P + 512 * 64));  // the last stage's copy of the tied head
}

// ZeRO 3 with tp 2: each rank shards its tp slice over its dp group and holds gathered only its
// slices of the embeddings and of the blocks in use (a block's slice: 12C²/2 + 7C/2 + 6C).
TEST(Plan, ZeroThreeWithTpShardsTheTpSlices) {
  PlanFlags f;
  f.dp = 2, f.tp = 2, f.zero = 3;
  Plan p = plan_from_flags(f, 8, 4, 16, 4);
  EXPECT_EQ(error_of(p, 4), "");
  const double C = 64, V = 512, block = 12 * C * C / 2 + 7 * C / 2 + 6 * C, kept = V * C / 2 + 64 * C + 2 * C;
  const double trained = 8 * block + kept;  // this rank's tp slice of every parameter
  const MemoryEstimate e = estimate_memory(p, kModel, 64, 0);
  EXPECT_DOUBLE_EQ(e.params, 4 * (trained / 2 + kept + 2 * block));
  EXPECT_DOUBLE_EQ(e.grads, 4 * (trained / 2 + kept + block));
  EXPECT_DOUBLE_EQ(e.optimizer, 8 * trained / 2);
  p.zero = 2;
  EXPECT_LT(e.total(), estimate_memory(p, kModel, 64, 0).total());
}

// ZeRO 3 with pipeline stages: each stage's dp group shards the stage's parameters; the first stage
// also holds its gathered embeddings, the last its final LayerNorm and its whole copy of the tied
// head (not a parameter there, gradient included).
TEST(Plan, ZeroThreeWithStagesShardsEachStage) {
  PlanFlags f;
  f.dp = 2, f.pp = 2, f.zero = 3;
  Plan p = plan_from_flags(f, 8, 4, 16, 4);
  EXPECT_EQ(error_of(p, 4), "");
  const double C = 64, V = 512, block = 12 * C * C + 13 * C, emb = V * C + 64 * C;
  const double first = 4 * block + emb, last = 4 * block + 2 * C;  // what each stage trains
  const MemoryEstimate e0 = estimate_memory(p, kModel, 64, 0), e1 = estimate_memory(p, kModel, 64, 2);
  EXPECT_DOUBLE_EQ(e0.params, 4 * (first / 2 + emb + 2 * block));
  EXPECT_DOUBLE_EQ(e0.grads, 4 * (first / 2 + emb + block));
  EXPECT_DOUBLE_EQ(e1.params, 4 * (last / 2 + 2 * C + 2 * block + V * C));
  EXPECT_DOUBLE_EQ(e1.grads, 4 * (last / 2 + 2 * C + block + V * C));
  EXPECT_DOUBLE_EQ(e1.optimizer, 8 * last / 2);
}

// Sequence parallelism splits the LayerNorms' inputs, 4 of the 10 bytes per token and channel that
// a layer keeps outside its linears (Megatron's count), over tp: per layer
// b·T·C·(6 + 4/tp + 24/tp + attention) instead of b·T·C·(10 + 24/tp + attention) (16-bit units:
// fp32 doubles both); nothing else changes.
TEST(Plan, SequenceParallelSplitsTheActivationsOutsideTheLinears) {
  PlanFlags f;
  f.tp = 2;
  const Plan p = plan_from_flags(f, 8, 2, 16, 4);
  ModelShape sp = kModel;
  sp.sequence_parallel = true;
  const MemoryEstimate a = estimate_memory(p, kModel, 64, 0), b = estimate_memory(p, sp, 64, 0);
  const double b_T_C = 4.0 * 64 * 64, layers = 8, in_flight = 1, fp32 = 2;
  // All 10 bytes per token and channel outside the linears' split become 10 / tp.
  EXPECT_DOUBLE_EQ(a.activations - b.activations, in_flight * layers * fp32 * b_T_C * (10 - 10.0 / 2));
  EXPECT_DOUBLE_EQ(a.params + a.grads + a.optimizer, b.params + b.grads + b.optimizer);
  PlanFlags one;
  const Plan q = plan_from_flags(one, 8, 1, 16, 4);  // tp 1: nothing to split
  EXPECT_DOUBLE_EQ(estimate_memory(q, kModel, 64, 0).activations, estimate_memory(q, sp, 64, 0).activations);
}

TEST(Plan, PerRankMemoryCaps) {
  PlanFlags f;
  f.dp = 2;
  const Plan dp = plan_from_flags(f, 8, 2, 16, 1);
  const double need = estimate_memory(dp, kModel, 64, 1).total() / (1024.0 * 1024 * 1024);
  EXPECT_NO_THROW(check_memory_caps(dp, kModel, 64, {{need * 1.1, "a"}, {need * 1.1, "b"}}));
  EXPECT_NO_THROW(check_memory_caps(dp, kModel, 64, {{0, "none"}, {0, "none"}}));
  try {
    check_memory_caps(dp, kModel, 64, {{need * 2, "site a"}, {need * 0.9, "site b's memory"}});
    FAIL() << "rank 1's cap was not checked";
  } catch (const slm::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("plan: rank 1 needs ~"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(site b's memory)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tighter({2, "x"}, {1, "y"}).from, "y");
  EXPECT_EQ(tighter({2, "x"}, {0, "y"}).from, "x");
  EXPECT_EQ(tighter({0, "x"}, {3, "y"}).from, "y");
}

// CPU ranks of one machine share its memory: their estimates and runtimes are checked together.
TEST(Plan, MachineMemorySharedByItsRanks) {
  PlanFlags f;
  f.dp = 2;
  const Plan dp = plan_from_flags(f, 8, 2, 16, 1);
  const double gib = 1024.0 * 1024 * 1024, need = estimate_memory(dp, kModel, 64, 0).total() / gib;
  auto on = [](int pool, double gb) {  // a rank of machine `pool` of gb GiB, its runtime holding 1 MiB
    MemoryCap c;
    c.machine_pool = pool, c.machine_gb = gb, c.resident_gb = 1.0 / 1024, c.machine_from = "this machine's memory";
    return c;
  };
  EXPECT_NO_THROW(check_memory_caps(dp, kModel, 64, {on(0, 2.1 * need + 0.01), on(0, 2.1 * need + 0.01)}));
  EXPECT_NO_THROW(check_memory_caps(dp, kModel, 64, {on(0, 1.5 * need), on(1, 1.5 * need)}));  // two machines
  try {  // each alone fits, the two together do not
    check_memory_caps(dp, kModel, 64, {on(0, 1.5 * need), on(0, 1.5 * need)});
    FAIL() << "the machine's ranks were not checked together";
  } catch (const slm::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("plan: ranks 0,1 of one machine need together ~"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("+ 2.0 MiB the runtime uses > its "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(this machine's memory)"), std::string::npos) << e.what();
  }
  try {  // one rank alone on a machine too small for it
    check_memory_caps(dp, kModel, 64, {on(0, 2 * need), on(1, 0.5 * need)});
    FAIL() << "rank 1's machine was not checked";
  } catch (const slm::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("plan: rank 1 needs ~"), std::string::npos) << e.what();
  }
}

// DiLoCo: flag plans are made replica-major so that sites hold whole replicas; a plan whose replica
// spans two sites, or sites of unequal replica counts, is refused in one line.
TEST(Plan, ReplicaSitesForDiloco) {
  PlanFlags f;
  f.pp = 2, f.tp = 2;
  Plan p = plan_from_flags(f, 8, 8, 32, 4);  // dp 2; stage-major: stage 0 on ranks 0-3
  EXPECT_THROW(replica_sites(p, 4), slm::UserError);
  p = replica_major(p);
  EXPECT_EQ(p.stages[0].ranks, (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(p.stages[1].ranks, (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(error_of(p, 8), "");
  EXPECT_EQ(replica_sites(p, 4), (std::vector<int>{0, 1}));
  EXPECT_EQ(replica_sites(p, 8), (std::vector<int>{0, 0}));
  f = {};
  p = plan_from_flags(f, 8, 3, 6, 2);  // 3 replicas on 3 ranks, sites of 2: 2 + 1 replicas
  try {
    replica_sites(p, 2);
    FAIL() << "unequal sites accepted";
  } catch (const slm::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("same number of replicas in every site"), std::string::npos) << e.what();
  }
}
