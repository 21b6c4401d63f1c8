// planner/comm_cost.cpp: see comm_cost.h.
#include "planner/comm_cost.h"

#include <algorithm>
#include <cmath>

namespace slm::planner {

namespace {
// One transfer's share of l's rate when `flows` transfers share it.
double share_Bps(const Link& l, int flows) { return l.beta_Bps / std::max(1, flows); }
}  // namespace

double flow_Bps(const Link& l, int connections, int flows) {
  const double share = share_Bps(l, flows);
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
    if (first) r.slowest = l;
    r.slowest.alpha_s = std::max(r.slowest.alpha_s, l.alpha_s);
    if (first || l.beta_Bps < r.slowest.beta_Bps) r.slowest.beta_Bps = l.beta_Bps, r.slowest.rate_given = l.rate_given;
    first = false;
  }
  return r;
}

double small_all_reduce_s(const Cluster& c, const std::vector<int>& ranks) {
  const size_t P = ranks.size();
  if (P < 2) return 0;
  double lap = 0;
  for (size_t i = 0; i < P; ++i) lap += c.between(ranks[i], ranks[(i + 1) % P]).alpha_s;
  return 2 * lap - c.between(ranks[0], ranks[1]).alpha_s;
}

bool probed_link(const Link& l, double measured_alpha) {
  return measured_alpha > 0 && std::abs(l.alpha_s / measured_alpha - 1) <= 0.25;
}

double hop_latency_s(const Link& l, const HopLatency& h, double measured_alpha, double bytes) {
  if (h.at_4B <= 0 || h.at_1MiB <= 0 || !probed_link(l, measured_alpha)) return l.alpha_s;
  const double lo = std::log(4.0), hi = std::log(1048576.0);
  const double f = std::clamp((std::log(std::max(bytes, 4.0)) - lo) / (hi - lo), 0.0, 1.0);
  return h.at_4B + f * (h.at_1MiB - h.at_4B);
}

double fit_hop_latency_s(bool all_reduce, int P, const Link& l, double bytes, double seconds) {
  if (P < 2) return 0;
  const double hops = all_reduce ? 2.0 * (P - 1) : P - 1.0;
  const double wire = all_reduce ? hops / P * bytes / flow_Bps(l) : hops / P * bytes / l.beta_Bps;
  return std::max(l.alpha_s, (seconds - wire) / hops);
}

double one_way_s(const Link& l, double bytes) {
  const auto& p = l.one_way;
  if (p.size() < 2) return l.alpha_s + bytes / l.beta_Bps;
  if (bytes <= p.front().first) return p.front().second;
  for (size_t k = 1; k < p.size(); ++k)
    if (bytes <= p[k].first) {
      const double f = (bytes - p[k - 1].first) / (p[k].first - p[k - 1].first);
      return p[k - 1].second + f * (p[k].second - p[k - 1].second);
    }
  return p.back().second + (bytes - p.back().first) / l.beta_Bps;
}

double p2p_s(const Link& l, double bytes, int flows) {
  return one_way_s(l, bytes) + bytes / share_Bps(l, flows) - bytes / l.beta_Bps;
}

double ring_all_reduce_s(int P, const Link& l, double bytes, int connections, int flows, double hop_s) {
  if (P < 2 || bytes <= 0) return 0;
  const double hops = 2.0 * (P - 1);
  return hops * (hop_s < 0 ? l.alpha_s : hop_s) + hops / P * bytes / flow_Bps(l, connections, flows);
}

double ring_all_gather_s(int P, const Link& l, double bytes_out, int connections, int flows, double hop_s) {
  if (P < 2 || bytes_out <= 0) return 0;
  const double hops = P - 1.0;
  // Gloo posts all of an all-gather's pieces at once: its rate is the link's share, not a window's
  // (measured: ZeRO-2's parameter gather and the bf16 cross-site step at 100 ms RTT, docs/planner.md).
  (void)connections;
  return hops * (hop_s < 0 ? l.alpha_s : hop_s) + hops / P * bytes_out / (l.beta_Bps / std::max(1, flows));
}

}  // namespace slm::planner
