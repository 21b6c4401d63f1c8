// planner/cluster.h: the cluster the planner plans for: ranks (site, device, memory, price) and the
// α-β links between and inside sites. Owns: Link, RankSpec, Cluster, cluster_from_spec (the
// testbed/cluster TOML, testbed/spec.h), apply_topology (links measured by `slm probe` override
// the file), cluster_from_probe (no file: sites are the groups of ranks joined by "local" links).
// Pure: no torch, no c10d.
// Example: 2 sites x 2 T4 joined at 10 ms one way, 1 Gbit/s -> ranks 0,1 in site 0, 2,3 in site 1;
// link(1, 2) = {alpha 10.05 ms, beta 125 MB/s}; link(0, 1) = the [inside] link.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "testbed/spec.h"

namespace slm::planner {

struct Link {
  Link() = default;
  Link(double alpha, double beta, bool given = false) : alpha_s(alpha), beta_Bps(beta), rate_given(given) {}
  double alpha_s = 0;   // one-way latency per message (software included)
  double beta_Bps = 0;  // bandwidth, bytes/s
  bool rate_given = false;  // β is a configured rate (cluster file), not a measurement
  // The one-way times `slm probe` measured at its message sizes ({bytes, seconds}, sizes ascending;
  // the median over the link's rank pairs); empty where it was not probed. Over the testbed's
  // 100 ms link a 256 KiB message took 108 ms one way and 2 MiB 107 ms, where α + bytes/β (50 ms,
  // 59 MB/s, the fit over 4 B, 256 KiB and 2 MiB) says 54 and 85 ms (planner/comm_cost.h: p2p_s).
  std::vector<std::pair<double, double>> one_way;
};

// A link with no delay and no rate limit in a cluster file: the measured Gloo loopback here
// (4 B all-reduce ~50 µs per hop, ~1.25 GB/s), stated in docs/planner.md.
constexpr double kBaseAlpha = 50e-6;
constexpr double kUnlimitedBps = 1.25e9;
// The largest message `slm probe` times per rank pair (comm::ProbeConfig::sizes).
constexpr double kProbeMessageBytes = 2 << 20;

// Ring collectives as `slm probe` timed them on the world group (comm/probe.h): the latency of one
// ring hop (the time less the α-β bandwidth term, over the hops) at 4 B and at 1 MiB moved in all.
// Over the testbed's 20 and 100 ms links Gloo pays about 2α per hop for all-gathers of any size and
// for all-reduces of 1 MiB (α for 4 B); at 0 ms, ~1.7 ms of software per hop (docs/planner.md).
struct HopLatency {
  double at_4B = 0, at_1MiB = 0;  // seconds per hop; 0 = not measured
};
struct MeasuredHops {
  double link_alpha_s = 0;  // α of the slowest link of the probe's ring: the link they apply to
  HopLatency all_reduce, all_gather;
  // The rate the bytes of the probe's 16 MiB all-gather moved at over that ring (0: not timed): on
  // the testbed ~60 MB/s over a 125 MB/s link (the link emulator shares the ranks' cores).
  double all_gather_Bps = 0;
};

struct RankSpec {
  int site = 0;
  std::string device = "cpu";
  double memory_gb = 0;       // 0 = unknown: no cap
  double price_per_hour = 0;  // USD
  double cores = 0;           // CPU ranks: cores it gets (a site's cpus / its ranks); 0 = one
};

struct Cluster {
  std::vector<std::string> sites;
  std::vector<RankSpec> ranks;         // numbered site by site
  std::vector<std::vector<Link>> link; // [site a][site b]; [a][a] = inside site a
  std::string links_from = "cluster file";  // or "probe (topology.json)"
  MeasuredHops hops;                          // from the probe, if it timed collectives
  int world() const { return static_cast<int>(ranks.size()); }
  const Link& between(int rank_a, int rank_b) const;
  int ranks_in_site(int site) const;
};

// Device defaults from planner/devices.h (memory, price) where the file leaves them 0.
// UserError (one line) for an unknown device name, listing the known ones.
Cluster cluster_from_spec(const testbed::TestbedSpec& s, const std::string& where);
// Replaces every site pair's link (and each site's inside link) by the median α, β of the probed
// rank pairs between them; a rate the file gives is kept where the probe's 2 MiB messages do not
// fill the link (bandwidth x RTT above 0.5 MiB: 476 of 1000 Mbit/s at 100 ms RTT, 123 of 250 at
// 20 ms, measured), and replaced by the probe's over shorter links; fills in
// `hops` from the probe's collective timings. UserError when the probe's world differs or the
// JSON is malformed.
void apply_topology(Cluster& c, const std::string& topology_json, const std::string& where);
// Sites = connected components of the probe's "local" pairs, widened to contiguous rank ranges
// (one site when `one_site`, e.g. every link faster than 5 ms RTT); every rank gets `device` (memory
// unknown, the table's price). Links as in apply_topology.
Cluster cluster_from_probe(const std::string& topology_json, const std::string& device, const std::string& where,
                           bool one_site = false);

}  // namespace slm::planner
