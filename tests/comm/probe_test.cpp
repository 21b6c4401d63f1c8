// tests/comm/probe_test.cpp: the pure parts of link probing: the rounds of disjoint pairs cover
// every pair once, the alpha-beta fit recovers a known line, and link classes split at the jump.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "comm/probe.h"

using namespace slm::comm;

TEST(Probe, TournamentCoversEveryPairOnce) {
  for (int n : {2, 3, 4, 5, 8}) {
    std::set<std::pair<int, int>> seen;
    auto rounds = tournament_rounds(n);
    EXPECT_EQ(rounds.size(), static_cast<size_t>(n % 2 ? n : n - 1));
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (auto [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "rank twice in one round";
        EXPECT_TRUE(seen.insert({a, b}).second) << "pair twice";
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2));
  }
}

// Pairs timed at once share the links they cross, so they go in turns: every pair once, no rank
// twice in a turn, at most pairs_at_once per turn; auto: one at a time up to 16 ranks.
TEST(Probe, TurnsTimeFewPairsAtOnce) {
  for (auto [n, k] : {std::pair{4, 0}, {5, 1}, {8, 2}, {16, 0}, {64, 0}, {8, 100}}) {
    const auto turns = probe_turns(n, k);
    const size_t at_once = k > 0 ? static_cast<size_t>(k) : static_cast<size_t>(std::max(1, n / 16));
    std::set<std::pair<int, int>> seen;
    for (const auto& turn : turns) {
      EXPECT_LE(turn.size(), at_once);
      std::set<int> busy;
      for (auto [a, b] : turn) {
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "rank twice in one turn";
        EXPECT_TRUE(seen.insert({a, b}).second) << "pair twice";
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2)) << n;
  }
  EXPECT_EQ(probe_turns(4, 0).size(), 6u);    // 2 sites x 2 ranks: the 6 pairs one by one
  EXPECT_EQ(probe_turns(64, 0).size(), 63u * 8);  // 32 pairs a round, 4 at a time
  EXPECT_EQ(probe_turns(8, 100).size(), 7u);  // as many as a round holds: the tournament's rounds
}

TEST(Probe, FitRecoversAlphaBeta) {
  const std::vector<int64_t> sizes = {4, 65536, 1 << 20, 4 << 20};
  std::vector<double> t;
  for (int64_t s : sizes) t.push_back(0.010 + static_cast<double>(s) / 125e6);  // 10 ms, 1 Gbit/s
  double alpha = 0, beta = 0;
  fit_alpha_beta(sizes, t, &alpha, &beta);
  EXPECT_NEAR(alpha, 0.010, 1e-6);
  EXPECT_NEAR(beta, 125e6, 1e3);
}

TEST(Probe, SmallMessagesNoSlowerThanLargerOnes) {
  // A 4 B round trip held up in every repeat (5.9 ms) is bounded by the 256 KiB one's 0.2 ms; the
  // sizes need not come sorted.
  std::vector<double> rtt = {5.87e-3, 0.22e-3, 2.42e-3};
  no_slower_than_larger({4, 256 << 10, 2 << 20}, rtt);
  EXPECT_EQ(rtt, (std::vector<double>{0.22e-3, 0.22e-3, 2.42e-3}));
  rtt = {2.0e-3, 9.0e-3, 1.0e-3};
  no_slower_than_larger({1 << 20, 4, 256}, rtt);
  EXPECT_EQ(rtt, (std::vector<double>{2.0e-3, 1.0e-3, 1.0e-3}));
}

TEST(Probe, ClassesSplitAtTheJump) {
  std::vector<PairLink> pairs(4);
  const double alphas[] = {0.0001, 0.00012, 0.05, 0.051};
  for (int i = 0; i < 4; ++i) pairs[static_cast<size_t>(i)].alpha_s = alphas[i], pairs[static_cast<size_t>(i)].beta_Bps = 1e9;
  auto classes = classify_links(pairs);
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].pairs, 2);
  EXPECT_EQ(pairs[2].cls, "wide");
  EXPECT_EQ(pairs[0].cls, "local");
  for (auto& p : pairs) p.alpha_s = 0.0001;  // no jump: one class
  EXPECT_EQ(classify_links(pairs).size(), 1u);
}

// What the WAN-aware all-reduce takes from a probe (comm/hierarchy.h): the slowest class, the
// channel count (bandwidth-delay product / 2 MiB, 1..8) and the smallest auto chunk
// (ranks x min(αβ, 1 MiB)).
TEST(Probe, WanSettingsFromTheSlowestClass) {
  ProbeResult r;
  r.classes = {{"local", 0.0002, 1.25e9, 2}, {"wide", 0.05, 1.25e8, 4}};
  const WideLink w = widest_class(r);
  EXPECT_DOUBLE_EQ(w.alpha_s, 0.05);
  EXPECT_DOUBLE_EQ(w.beta_Bps, 1.25e8);
  WanOptions o;
  o.link = w;
  EXPECT_EQ(resolve_wan(o).channels, 6);  // 12.5 MB in flight
  o.channels = 2;
  EXPECT_EQ(resolve_wan(o).channels, 2);  // set by the user: kept
  EXPECT_EQ(resolve_wan(WanOptions{}).channels, 1);
  EXPECT_EQ(min_chunk_bytes(w, 4), 4 << 20);                 // long path: Gloo's window bounds it
  EXPECT_EQ(min_chunk_bytes({0.0002, 1.25e9}, 4), 1000000);  // short path: α·β = 250 kB
  EXPECT_EQ(min_chunk_bytes({}, 2), 2 << 20);                // unknown: as a long path
}
