// comm/probe.h: link probing across the ranks of a job (`slm probe`): round-trip latency and
// bandwidth for every rank pair (message-size sweep, point to point), timings of all-reduce and
// all-gather (4 B and 1 MiB; all-gather 16 MiB too) on the world group (and, on request, all-reduces of given sizes
// through the configured WAN-aware path), α (latency) and β (bandwidth) fitted per pair and per link class.
// Owns: ProbeConfig, ProbeResult, probe_links, link classes, the readable matrix and the topology
// file (JSON) that the planner reads.
// Pairs are measured in turns: the rounds of a round-robin tournament (N/2 disjoint pairs each,
// N-1 rounds), each split into turns of ProbeConfig::pairs_at_once pairs, a barrier between turns.
// Pairs timed at once that cross one link share its rate and would each report a part of it
// (2 sites x 2 ranks: both cross-site pairs of a round share the site link; at 0 ms RTT the probe
// saw 70-103 of its 120 MB/s, and the planner put data parallelism 18-23% high, docs/planner.md),
// so up to 16 ranks one pair is timed at a time (N(N-1)/2 turns). One-way time t(s) = RTT(s)/2
// is fitted as α + s/β (least squares over the sizes). Classes: pairs sorted by α and split at
// the largest jump above 3x ("local" below, "wide" above; one class "local" when there is none).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/hierarchy.h"
#include "comm/world.h"

namespace slm::comm {

struct ProbeConfig {
  std::vector<int64_t> sizes = {4, 256 << 10, 2 << 20};  // bytes per message
  int repeats = 3;                                      // round trips per size (the fastest counts), after
                                                        // one warm-up round trip per pair
  int pairs_at_once = 0;  // pairs timed at the same time; 0 = auto: 1 up to 16 ranks, N/16 above
  bool collectives = true;  // time all-reduce and all-gather (4 B, 1 MiB; a 16 MiB all-gather) on the world group
  std::vector<double> allreduce_mb;  // also time all-reduces of these sizes (MiB) the way training
                                     // reduces gradients: with these [dist] WAN options
  WanOptions wan;
};

struct PairLink {
  int a = 0, b = 0;
  std::vector<double> rtt_s;  // fastest round trip per size (as ping's minimum), no slower than a
                              // larger message's (see no_slower_than_larger)
  double alpha_s = 0;         // one-way latency
  double beta_Bps = 0;        // bandwidth, bytes/s (0 = not measurable)
  std::string cls;            // "local" | "wide"
};

struct LinkClass {
  std::string name;
  double alpha_s = 0, beta_Bps = 0;  // medians over its pairs
  int pairs = 0;
};

struct CollectiveTiming {
  std::string op;  // "all-reduce" | "all-gather" | "all-reduce (<describe_wan>)"
  int64_t bytes = 0;
  double seconds = 0;  // median
};

struct ProbeResult {
  int world = 1;
  std::vector<int64_t> sizes;
  std::vector<PairLink> pairs;
  std::vector<LinkClass> classes;
  std::vector<CollectiveTiming> collectives;
  double elapsed_s = 0;
};

// Collective over the world: every rank takes part and gets the same result.
ProbeResult probe_links(World& w, const ProbeConfig& c);
// Pure helpers (unit-tested): the rounds of disjoint pairs, the α-β fit, the classes.
std::vector<std::vector<std::pair<int, int>>> tournament_rounds(int n);
// The tournament's rounds cut into turns of at most `pairs_at_once` pairs (0 = auto, as above).
std::vector<std::vector<std::pair<int, int>>> probe_turns(int n, int pairs_at_once);
// A message takes no longer than a larger one over the same link: each size's round trip becomes
// the fastest of its own and the larger sizes'. Where every repeat of a size met a rank the
// scheduler held (4 ranks on 2 busy cores: a 4 B round trip at 5.9 ms beside 0.2 ms for 256 KiB),
// a larger message's time bounds it.
void no_slower_than_larger(const std::vector<int64_t>& sizes, std::vector<double>& rtt_s);
void fit_alpha_beta(const std::vector<int64_t>& sizes, const std::vector<double>& one_way_s, double* alpha_s,
                    double* beta_Bps);
std::vector<LinkClass> classify_links(std::vector<PairLink>& pairs);
std::string probe_matrix(const ProbeResult& r);
// The class with the largest α (for the WAN-aware all-reduce: comm/hierarchy.h); zeros if none.
WideLink widest_class(const ProbeResult& r);
std::string probe_json(const ProbeResult& r);

}  // namespace slm::comm
