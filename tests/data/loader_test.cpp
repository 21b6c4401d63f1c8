// tests/data/loader_test.cpp: batches are deterministic given a seed, cover each sample once per
// epoch, split disjointly across ranks without changing the global batch, and resume exactly; a mix
// of datasets gives each its share of every epoch.
#include "data/loader.h"

#include <gtest/gtest.h>

#include <set>

#include "test_util.h"
#include "util/error.h"

namespace slm::data {

struct LoaderFixture : ::testing::Test {
  test::TempDir tmp;
  std::vector<Shard> shards;
  void SetUp() override {
    // Token value = its position in the stream, so a sample identifies itself. The middle
    // shard is too short for a sample of T=8 and must be skipped.
    uint32_t next = 0;
    for (int len : {81, 5, 41}) {
      ShardWriter w(tmp / ("s" + std::to_string(len) + ".bin"), 4);
      for (int i = 0; i < len; ++i, ++next) w.append(&next, 1);
      w.commit();
      shards.emplace_back(tmp / ("s" + std::to_string(len) + ".bin"));
    }
  }
  static std::vector<int64_t> firsts(const Batch& b) {  // first input token of each row
    std::vector<int64_t> out;
    for (int64_t i = 0; i < b.B; ++i) out.push_back(b.inputs[i * b.T]);
    return out;
  }
};

TEST_F(LoaderFixture, SamplesAndTargets) {
  Loader l(shards, {8, 1, false});
  EXPECT_EQ(l.num_samples(), 10 + 0 + 5);  // (81-1)/8 + 0 + (41-1)/8
  Batch b = l.next(15);
  EXPECT_EQ(b.B, 15);
  EXPECT_EQ(b.T, 8);
  for (int64_t i = 0; i < b.B * b.T; ++i) EXPECT_EQ(b.targets[i], b.inputs[i] + 1);
  EXPECT_EQ(firsts(b)[10], 86);  // first sample of the third shard (tokens 86..126)
}

TEST_F(LoaderFixture, EpochVisitsEverySampleOnceInSeededOrder) {
  Loader a(shards, {8, 42, true}), b(shards, {8, 42, true}), c(shards, {8, 43, true});
  std::vector<int64_t> ea, eb, ec;
  for (int i = 0; i < 5; ++i) {  // 5 batches of 3 = one epoch of 15
    auto fa = firsts(a.next(3)), fb = firsts(b.next(3)), fc = firsts(c.next(3));
    ea.insert(ea.end(), fa.begin(), fa.end());
    eb.insert(eb.end(), fb.begin(), fb.end());
    ec.insert(ec.end(), fc.begin(), fc.end());
  }
  EXPECT_EQ(ea, eb);
  EXPECT_NE(ea, ec);
  EXPECT_EQ(std::set<int64_t>(ea.begin(), ea.end()).size(), 15u);
  Batch next = a.next(3);
  EXPECT_EQ(next.epoch, 1);  // the next epoch, reshuffled
  EXPECT_EQ(a.state().epoch, 1);
}

TEST_F(LoaderFixture, RanksSeeDisjointSlicesOfTheSameGlobalBatch) {
  Loader single(shards, {8, 7, true});
  std::vector<Loader> ranks;
  for (int r = 0; r < 3; ++r) ranks.emplace_back(shards, LoaderOptions{8, 7, true});
  for (int step = 0; step < 7; ++step) {  // crosses an epoch boundary
    std::vector<int64_t> global = firsts(single.next(6)), joined;
    for (int r = 0; r < 3; ++r) {
      auto f = firsts(ranks[r].next(2, r, 3));
      joined.insert(joined.end(), f.begin(), f.end());
    }
    EXPECT_EQ(joined, global) << "step " << step;
    EXPECT_EQ(std::set<int64_t>(joined.begin(), joined.end()).size(), joined.size());
  }
  // Uneven slices (mixed GPUs): 1 + 5 samples of a global batch of 6.
  Loader u0(shards, {8, 7, true}), u1(shards, {8, 7, true}), ref(shards, {8, 7, true});
  auto g = firsts(ref.next(6));
  auto s0 = firsts(u0.next_slice(6, 0, 1)), s1 = firsts(u1.next_slice(6, 1, 5));
  s0.insert(s0.end(), s1.begin(), s1.end());
  EXPECT_EQ(s0, g);
}

// A step read as micro-batches (groups of 2 of a global batch of 6) takes the same samples as one
// read of 6, across epoch ends too (15 samples: each epoch leaves 3 over, which a group of 2 fits
// into unless the step reserves its whole batch first). Elastic jobs and pipelines depend on it.
TEST_F(LoaderFixture, MicroBatchesOfAStepComeFromOneEpoch) {
  Loader whole(shards, {8, 5, true}), split(shards, {8, 5, true});
  for (int step = 0; step < 6; ++step) {
    std::vector<int64_t> want = firsts(whole.next(6)), got;
    split.reserve(6);
    for (int m = 0; m < 3; ++m) {
      auto f = firsts(split.next_slice(2, 0, 2));
      got.insert(got.end(), f.begin(), f.end());
    }
    EXPECT_EQ(got, want) << "step " << step;
    EXPECT_EQ(split.state().epoch, whole.state().epoch);
  }
}

TEST_F(LoaderFixture, ResumesExactly) {
  Loader straight(shards, {8, 9, true});
  std::vector<std::vector<int64_t>> want;
  for (int i = 0; i < 12; ++i) want.push_back(straight.next(4).inputs);
  Loader first(shards, {8, 9, true});
  for (int i = 0; i < 5; ++i) first.next(4);
  LoaderState saved = first.state();
  Loader resumed(shards, {8, 9, true});
  resumed.restore(saved);
  for (int i = 5; i < 12; ++i) EXPECT_EQ(resumed.next(4).inputs, want[i]) << "batch " << i;
}

// The fixture's shards as two datasets: the first shard (10 samples of 8 tokens: first tokens
// below 81), and the other two (5 samples); shares 0.6 / 0.4 of the 15 samples: 9 and 6.
const SourceMix kMix{{1, 2}, {0.6, 0.4}};
bool from_first(int64_t first_token) { return first_token < 81; }

TEST_F(LoaderFixture, MixGivesEachDatasetItsShareOfEveryEpoch) {
  Loader l(shards, {8, 5, true}, kMix);
  EXPECT_EQ(l.num_samples(), 15);
  std::vector<int64_t> previous;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> e;
    for (int i = 0; i < 5; ++i) {
      Batch b = l.next(3);
      EXPECT_EQ(b.epoch, epoch);
      for (int64_t f : firsts(b)) e.push_back(f);
    }
    std::multiset<int64_t> first, second;
    for (int64_t f : e) (from_first(f) ? first : second).insert(f);
    EXPECT_EQ(first.size(), 9u);  // 9 of its 10 samples, none twice
    EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), 9u);
    EXPECT_EQ(second.size(), 6u);  // all 5 of its samples, one of them twice
    EXPECT_EQ(std::set<int64_t>(second.begin(), second.end()).size(), 5u);
    EXPECT_NE(e, previous);  // each epoch drawn and shuffled anew
    previous = e;
  }
  Loader again(shards, {8, 5, true}, kMix), other_seed(shards, {8, 6, true}, kMix);
  EXPECT_EQ(again.next(15).inputs, Loader(shards, {8, 5, true}, kMix).next(15).inputs);
  EXPECT_NE(again.next(15).inputs, other_seed.next(15).inputs);
}

TEST_F(LoaderFixture, MixResumesExactlyAndRanksSliceTheSameGlobalBatch) {
  Loader straight(shards, {8, 9, true}, kMix);
  std::vector<std::vector<int64_t>> want;
  for (int i = 0; i < 9; ++i) want.push_back(straight.next(4).inputs);
  Loader first(shards, {8, 9, true}, kMix);
  for (int i = 0; i < 4; ++i) first.next(4);
  Loader resumed(shards, {8, 9, true}, kMix);
  resumed.restore(first.state());
  for (int i = 4; i < 9; ++i) EXPECT_EQ(resumed.next(4).inputs, want[i]) << "batch " << i;
  Loader r0(shards, {8, 9, true}, kMix), r1(shards, {8, 9, true}, kMix);
  for (int i = 0; i < 9; ++i) {
    std::vector<int64_t> both = r0.next(2, 0, 2).inputs, b1 = r1.next(2, 1, 2).inputs;
    both.insert(both.end(), b1.begin(), b1.end());
    EXPECT_EQ(both, want[i]) << "batch " << i;
  }
}

TEST_F(LoaderFixture, MixErrors) {
  EXPECT_THROW(Loader(shards, {8, 1, true}, {{1, 1, 1}, {0.4, 0.3, 0.3}}), UserError);  // the 5-token shard alone
  EXPECT_THROW(Loader(shards, {8, 1, true}, {{1, 1}, {0.5, 0.5}}), std::invalid_argument);  // 2 of 3 shards
}

TEST_F(LoaderFixture, Errors) {
  Loader l(shards, {8, 1, true});
  EXPECT_THROW(l.next(16), UserError);  // global batch larger than the split
  EXPECT_THROW(l.next_slice(4, 3, 2), UserError);
  EXPECT_THROW(l.restore({0, 99}), UserError);
  EXPECT_THROW(Loader(shards, {200, 1, true}), UserError);  // no sample of 201 tokens
}

}  // namespace slm::data
