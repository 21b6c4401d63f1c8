// planner/comm_cost.h: how long one collective or transfer takes over α-β links, as Gloo and
// comm/ really run them. Owns: flow_Bps, p2p_s, ring_all_reduce_s, ring_all_gather_s,
// small_all_reduce_s, RingLinks (the slowest hop of a group's ring and how many flows share it), ring_links, and the
// hop latency that `slm probe` measured (fit_hop_latency_s, hop_latency_s).
// Pure functions, unit-tested against hand-computed values (tests/planner/cost_model_test.cpp).
// Worked example: 100 MB all-reduced by 4 ranks whose ring crosses a 50 ms, 1 Gbit/s link on one
// connection: 2·3·50 ms latency + 1.5·100 MB / min(125 MB/s, 0.9 MB / 50 ms = 18 MB/s) = 8.6 s
// (measured: 8.97 s, measured-facts.md).
#pragma once
#include <vector>

#include "planner/cluster.h"

namespace slm::planner {

// Bytes a Gloo connection keeps in flight per one-way delay: ~2 MiB per round trip (two 1 MiB
// pieces), fitted to the measured 100 MB all-reduces at 10 and 50 ms one way (0.85-0.9 MB).
constexpr double kWindowBytes = 0.9e6;

// What one flow moves per second over l when `flows` flows share it: its share of the link's rate,
// or the window of its `connections` per one-way delay, whichever is smaller.
double flow_Bps(const Link& l, int connections = 1, int flows = 1);

// The slowest hop of a ring over `ranks` (in order, wrapping) and the flows sharing its bandwidth.
struct RingLinks {
  Link slowest;          // the largest α and the smallest β of its edges (a ring step waits for
                         // the slowest edge; they differ where every α is sub-ms noise)
  bool crosses_sites = false;
  int site_edges = 0;    // ring edges whose ends are in different sites
};
RingLinks ring_links(const Cluster& c, const std::vector<int>& ranks);

// The latency of one hop of a ring collective moving `bytes` in all over a ring whose slowest link
// is `l`: the probe's measured hop latency `h` when l is the link it was measured on (α within 25%
// of `measured_alpha`), interpolated in log(bytes) between 4 B and 1 MiB and constant above;
// else l's α.
double hop_latency_s(const Link& l, const HopLatency& h, double measured_alpha, double bytes);
// Whether the probe's collective timings apply to link l: its α within 25% of the link they ran on.
bool probed_link(const Link& l, double measured_alpha);
// The probe's measured hop latency of a ring over P ranks whose slowest link is l: the collective's
// time less its bandwidth term (all-reduce: 2(P-1)/P · bytes at flow_Bps, all-gather: (P-1)/P ·
// bytes at β), over its hops; at least α.
double fit_hop_latency_s(bool all_reduce, int P, const Link& l, double bytes, double seconds);

// One message of `bytes` from a to b when `flows` transfers share the link: α + flows·bytes / rate.
// No Gloo window: a point-to-point send is one write of the whole buffer, which TCP's autotuned
// window carries in one flight (measured on the testbed at 50 ms one way: 4 MiB arrived 1.5 ms
// after 256 KiB; bench_collectives p2p), unlike the ring collectives' 1 MiB pieces. Where the
// probe timed the link (Link::one_way), a message takes the time measured at its size
// (interpolated between the probe's sizes, and past the largest its bytes at β), plus the wait
// for the other flows' bytes: over the testbed's 100 ms link a 256 KiB activation took 2α, not
// the α + bytes/β of the fit (rtt100's pipelines came out 5-30% low with that; docs/planner.md).
double p2p_s(const Link& l, double bytes, int flows = 1);
// One message of `bytes` over l alone: the probe's measured times where it has them, else α + bytes/β.
double one_way_s(const Link& l, double bytes);
// A sum of a few bytes (the gradient norm's one double) over `ranks` (cluster ranks, in the
// group's order), from the last rank's arrival to the last rank's finish, as Gloo runs it
// (bench_collectives skew on the testbed: 2, 4 and 8 ranks in 2 sites, 4 ranks in 4 sites; the
// same whichever ranks arrive first): one lap of the ring's one-way latencies, then back around to
// every rank but the first one's right neighbour: 2 Σα − α(r0, r1). Four ranks in two sites 50 ms
// apart: 200 ms (not 2(P-1) = 6 hops: those are back-to-back sums' period, as `slm probe` times them).
double small_all_reduce_s(const Cluster& c, const std::vector<int>& ranks);
// Ring all-reduce of `bytes` over P ranks: 2(P-1) hops, each paying `hop_s` (< 0: the slowest
// link's α), and 2(P-1)/P · bytes through each link at flow_Bps(connections, flows) (`flows` rings
// share it).
double ring_all_reduce_s(int P, const Link& slowest, double bytes, int connections = 1, int flows = 1,
                         double hop_s = -1);
// Ring all-gather into `bytes_out` (the whole gathered size) over P ranks: (P-1) hops of `hop_s`
// (< 0: α) and (P-1)/P · bytes_out through each link at its rate shared by `flows` (Gloo posts
// every piece at once, so no window limit; `connections` is unused).
double ring_all_gather_s(int P, const Link& slowest, double bytes_out, int connections = 1, int flows = 1,
                         double hop_s = -1);

}  // namespace slm::planner
