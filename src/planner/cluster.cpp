// planner/cluster.cpp: see cluster.h.
#include "planner/cluster.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "planner/comm_cost.h"
#include "planner/devices.h"
#include "util/error.h"
#include "util/stats.h"

namespace slm::planner {
namespace {

Link link_of(const testbed::LinkSpec& l) {
  return {kBaseAlpha + l.delay_ms * 1e-3, l.rate_mbit > 0 ? l.rate_mbit * 1e6 / 8 : kUnlimitedBps, l.rate_mbit > 0};
}

struct ProbedPair {
  int a = 0, b = 0;
  double alpha_s = 0, beta_Bps = 0;
  bool local = true;
  std::vector<std::pair<double, double>> one_way;  // {bytes, seconds}: half of each size's round trip
};

// A pair's one-way times at the probe's sizes (its "rtt_s" against the file's "sizes"); none where
// the file has neither or they do not match.
std::vector<std::pair<double, double>> one_way_of(const nlohmann::json& p, const std::vector<double>& sizes) {
  std::vector<std::pair<double, double>> out;
  if (!p.contains("rtt_s") || p.at("rtt_s").size() != sizes.size()) return out;
  for (size_t k = 0; k < sizes.size(); ++k) out.emplace_back(sizes[k], p.at("rtt_s").at(k).get<double>() / 2);
  return out;
}

// Per size, the median of the pairs' one-way times; none unless every pair has the same sizes.
std::vector<std::pair<double, double>> median_one_way(const std::vector<ProbedPair>& v) {
  std::vector<std::pair<double, double>> out;
  for (const ProbedPair& p : v)
    if (p.one_way.size() < 2 || p.one_way.size() != v.front().one_way.size()) return out;
  for (size_t k = 0; k < v.front().one_way.size(); ++k) {
    std::vector<double> t;
    for (const ProbedPair& p : v) t.push_back(p.one_way[k].second);
    out.emplace_back(v.front().one_way[k].first, median(t));
  }
  return out;
}

// The topology file of `slm probe`, parsed once; UserError (one line) when it is not JSON.
nlohmann::json parse_topology(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a topology file of `slm probe` ({})", where, e.what()));
  }
}

std::vector<ProbedPair> read_pairs(const nlohmann::json& j, const std::string& where, int* world) {
  try {
    *world = j.at("world").get<int>();
    const std::vector<double> sizes = j.value("sizes", std::vector<double>{});
    if (!std::is_sorted(sizes.begin(), sizes.end()) || (!sizes.empty() && sizes.front() < 0))
      throw UserError(fmt::format("{}: the probe's message sizes are not ascending sizes in bytes", where));
    std::vector<ProbedPair> v;
    if (j.contains("pairs"))
      for (const auto& p : j.at("pairs"))
        v.push_back({p.at("a").get<int>(), p.at("b").get<int>(), p.at("alpha_s").get<double>(),
                     p.at("beta_Bps").get<double>(), p.value("class", std::string("local")) == "local",
                     one_way_of(p, sizes)});
    for (const ProbedPair& p : v)
      if (p.a < 0 || p.b < 0 || p.a >= *world || p.b >= *world || p.a == p.b)
        throw UserError(fmt::format("{}: pair ({}, {}) is outside the probe's {} ranks", where, p.a, p.b, *world));
    return v;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a topology file of `slm probe` ({})", where, e.what()));
  }
}

void set_links(Cluster& c, const std::vector<ProbedPair>& pairs) {
  const size_t S = c.sites.size();
  std::map<std::pair<int, int>, std::vector<ProbedPair>> by_sites;
  for (const ProbedPair& p : pairs) {
    int sa = c.ranks[static_cast<size_t>(p.a)].site, sb = c.ranks[static_cast<size_t>(p.b)].site;
    by_sites[{std::min(sa, sb), std::max(sa, sb)}].push_back(p);
  }
  for (const auto& [key, v] : by_sites) {
    std::vector<double> a, b;
    for (const ProbedPair& p : v) {
      a.push_back(p.alpha_s);
      if (p.beta_Bps > 0) b.push_back(p.beta_Bps);
    }
    if (static_cast<size_t>(key.first) >= S || static_cast<size_t>(key.second) >= S) continue;
    Link& l = c.link[static_cast<size_t>(key.first)][static_cast<size_t>(key.second)];
    l.alpha_s = median(a);
    // A rate the file gives stays where the probe's largest message cannot fill the link (its
    // bandwidth-delay product above a quarter of that message); over a short link the probe's β is
    // the real one (the testbed's 1000 Mbit/s path at 0 ms moved 79-104 MB/s, measured).
    const bool probe_fills = 2 * l.alpha_s * l.beta_Bps < kProbeMessageBytes / 4;
    if ((!l.rate_given || probe_fills) && !b.empty()) l.beta_Bps = median(b);
    else if (!l.rate_given) l.beta_Bps = kUnlimitedBps;
    l.one_way = median_one_way(v);
    c.link[static_cast<size_t>(key.second)][static_cast<size_t>(key.first)] = l;
  }
  c.links_from = "probe (topology.json)";
}

// The probe's collective timings on the world group (rank order: a ring over every rank) as hop
// latencies of that ring's slowest link; left unset when it timed none or the ring has one rank.
void set_hops(Cluster& c, const nlohmann::json& j, const std::string& where) try {
  if (!j.contains("collectives") || c.world() < 2) return;
  std::vector<int> all(static_cast<size_t>(c.world()));
  std::iota(all.begin(), all.end(), 0);
  const Link slowest = ring_links(c, all).slowest;
  MeasuredHops h;
  h.link_alpha_s = slowest.alpha_s;
  std::pair<double, double> large_gather{0, 0};  // bytes, seconds
  for (const auto& t : j.at("collectives")) {
    const std::string op = t.at("op").get<std::string>();
    const double bytes = t.at("bytes").get<double>(), seconds = t.at("seconds").get<double>();
    if (!(bytes >= 0 && bytes < 1e15 && seconds > 0 && seconds <= 3600))
      throw UserError(fmt::format("{}: a collective timing of {} bytes in {} s is out of range (bytes >= 0, seconds in "
                                  "(0, 3600])", where, bytes, seconds));
    if (op != "all-reduce" && op != "all-gather") continue;  // WAN-path timings: not a plain ring
    if (bytes > 2 * 1048576.0) {  // a large all-gather: its rate, after the hops (below)
      if (op == "all-gather") large_gather = {bytes, seconds};
      continue;
    }
    HopLatency& hl = op == "all-reduce" ? h.all_reduce : h.all_gather;
    (bytes <= 4 ? hl.at_4B : hl.at_1MiB) = fit_hop_latency_s(op == "all-reduce", c.world(), slowest, bytes, seconds);
  }
  // (P-1)/P of its bytes moved in its time less P-1 hops of the 1 MiB all-gather's latency.
  const auto [bytes, seconds] = large_gather;
  const double P = c.world(), wire_s = seconds - (P - 1) * std::max(h.all_gather.at_1MiB, slowest.alpha_s);
  if (bytes > 0 && wire_s > 0) h.all_gather_Bps = (P - 1) / P * bytes / wire_s;
  c.hops = h;
} catch (const nlohmann::json::exception& e) {
  throw UserError(fmt::format("{}: not a topology file of `slm probe` ({})", where, e.what()));
}

}  // namespace

const Link& Cluster::between(int a, int b) const {
  return link[static_cast<size_t>(ranks[static_cast<size_t>(a)].site)][static_cast<size_t>(ranks[static_cast<size_t>(b)].site)];
}

int Cluster::ranks_in_site(int site) const {
  return static_cast<int>(std::count_if(ranks.begin(), ranks.end(), [&](const RankSpec& r) { return r.site == site; }));
}

Cluster cluster_from_spec(const testbed::TestbedSpec& s, const std::string& where) {
  Cluster c;
  const size_t S = s.sites.size();
  c.link.assign(S, std::vector<Link>(S));
  for (size_t i = 0; i < S; ++i) {
    const testbed::SiteSpec& site = s.sites[i];
    const DeviceSpec* d = find_device(site.device);
    if (!d)
      throw UserError(fmt::format("{}: site '{}': unknown device '{}' (known: {})", where, site.name, site.device,
                                  fmt::join(device_names(), ", ")));
    c.sites.push_back(site.name);
    for (int k = 0; k < site.ranks; ++k)
      c.ranks.push_back({static_cast<int>(i), d->name, site.memory_gb > 0 ? site.memory_gb : d->memory_gb,
                         site.price_per_hour > 0 ? site.price_per_hour : d->price_per_hour,
                         site.cpus > 0 ? site.cpus / site.ranks : 0});
    for (size_t j = 0; j < S; ++j) c.link[i][j] = link_of(testbed::link_between(s, static_cast<int>(i), static_cast<int>(j)));
  }
  return c;
}

void apply_topology(Cluster& c, const std::string& text, const std::string& where) {
  const nlohmann::json j = parse_topology(text, where);
  int world = 0;
  const std::vector<ProbedPair> pairs = read_pairs(j, where, &world);
  if (world != c.world())
    throw UserError(fmt::format("{}: the probe measured {} ranks, the cluster has {}", where, world, c.world()));
  set_links(c, pairs);
  set_hops(c, j, where);
}

Cluster cluster_from_probe(const std::string& text, const std::string& device, const std::string& where,
                           bool one_site) {
  const nlohmann::json j = parse_topology(text, where);
  int world = 0;
  const std::vector<ProbedPair> pairs = read_pairs(j, where, &world);
  // Sites: connected components of the local pairs, widened to contiguous rank ranges (the
  // runtime numbers sites by rank; a noisy probe must not interleave them).
  std::vector<int> site_of(static_cast<size_t>(world));
  std::iota(site_of.begin(), site_of.end(), 0);
  auto root = [&](int x) {
    while (site_of[static_cast<size_t>(x)] != x) x = site_of[static_cast<size_t>(x)];
    return x;
  };
  auto join = [&](int a, int b) { site_of[static_cast<size_t>(std::max(root(a), root(b)))] = std::min(root(a), root(b)); };
  for (const ProbedPair& p : pairs)
    if (p.local || one_site) join(p.a, p.b);
  if (one_site)
    for (int r = 1; r < world; ++r) join(0, r);
  for (bool changed = true; changed;) {  // a component spanning [lo, hi] takes every rank between
    changed = false;
    for (int r = 1; r < world; ++r)
      if (root(r) < root(r - 1)) join(r, r - 1), changed = true;
      else
        for (int q = r + 1; q < world; ++q)
          if (root(q) == root(r - 1) && root(r) != root(q)) {
            join(r, q);
            changed = true;
            break;
          }
  }
  const DeviceSpec* d = find_device(device);
  Cluster c;
  std::map<int, int> site_of_root;
  for (int r = 0; r < world; ++r) {
    auto [it, fresh] = site_of_root.emplace(root(r), static_cast<int>(c.sites.size()));
    if (fresh) c.sites.push_back(fmt::format("site{}", it->second));
    c.ranks.push_back({it->second, d ? d->name : device, 0, d ? d->price_per_hour : 0});
  }
  const size_t S = c.sites.size();
  c.link.assign(S, std::vector<Link>(S, Link{kBaseAlpha, kUnlimitedBps}));
  set_links(c, pairs);
  set_hops(c, j, where);
  return c;
}

}  // namespace slm::planner
