// planner/comm_cost.cpp: see comm_cost.h.
#include "planner/comm_cost.h"

#include <algorithm>

namespace slm::planner {

double flow_Bps(const Link& l, int connections, int flows) {
  const double share = l.beta_Bps / std::max(1, flows);
  return l.alpha_s > 0 ? std::min(share, std::max(1, connections) * kWindowBytes / l.alpha_s) : share;
}

RingLinks ring_links(const Cluster& c, const std::vector<int>& ranks) {
  RingLinks r;
  const size_t P = ranks.size();
  if (P < 2) return r;
  bool first = true;
  for (size_t i = 0; i < P; ++i) {
    const int a = ranks[i], b = ranks[(i + 1) % P];
    const Link& l = c.between(a, b);
    if (c.ranks[static_cast<size_t>(a)].site != c.ranks[static_cast<size_t>(b)].site) {
      r.crosses_sites = true;
      ++r.site_edges;
    }
    if (first || l.alpha_s > r.slowest.alpha_s || (l.alpha_s == r.slowest.alpha_s && l.beta_Bps < r.slowest.beta_Bps))
      r.slowest = l;
    first = false;
  }
  return r;
}

double p2p_s(const Link& l, double bytes, int flows) {
  return l.alpha_s + bytes / flow_Bps(l, 1, flows);
}

double ring_all_reduce_s(int P, const Link& l, double bytes, int connections, int flows) {
  if (P < 2 || bytes <= 0) return 0;
  const double hops = 2.0 * (P - 1);
  return hops * l.alpha_s + hops / P * bytes / flow_Bps(l, connections, flows);
}

double ring_all_gather_s(int P, const Link& l, double bytes_out, int connections, int flows) {
  if (P < 2 || bytes_out <= 0) return 0;
  const double hops = P - 1.0;
  // Gloo posts all of an all-gather's pieces at once: its rate is the link's share, not a window's
  // (measured: ZeRO-2's parameter gather and the bf16 cross-site step at 100 ms RTT, docs/planner.md).
  (void)connections;
  return hops * l.alpha_s + hops / P * bytes_out / (l.beta_Bps / std::max(1, flows));
}

}  // namespace slm::planner
