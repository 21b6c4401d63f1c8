// comm/probe.cpp: see probe.h.
#include "comm/probe.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <nlohmann/json.hpp>

#include "comm/collectives.h"
#include "comm/hierarchy.h"
#include "util/byte_size.h"
#include "util/stats.h"

namespace slm::comm {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::vector<std::vector<std::pair<int, int>>> tournament_rounds(int n) {
  const int m = n % 2 ? n + 1 : n;  // a dummy player sits out when n is odd
  std::vector<int> ring(static_cast<size_t>(m));
  for (int i = 0; i < m; ++i) ring[static_cast<size_t>(i)] = i;
  std::vector<std::vector<std::pair<int, int>>> rounds;
  for (int r = 0; r + 1 < m; ++r) {
    std::vector<std::pair<int, int>> round;
    for (int i = 0; i < m / 2; ++i) {
      int a = ring[static_cast<size_t>(i)], b = ring[static_cast<size_t>(m - 1 - i)];
      if (a < n && b < n) round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(round);
    std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());  // circle method: 0 stays
  }
  return rounds;
}

std::vector<std::vector<std::pair<int, int>>> probe_turns(int n, int pairs_at_once) {
  const size_t k = static_cast<size_t>(pairs_at_once > 0 ? pairs_at_once : std::max(1, n / 16));
  std::vector<std::vector<std::pair<int, int>>> turns;
  for (const auto& round : tournament_rounds(n))
    for (size_t i = 0; i < round.size(); i += k)
      turns.emplace_back(round.begin() + static_cast<std::ptrdiff_t>(i),
                         round.begin() + static_cast<std::ptrdiff_t>(std::min(round.size(), i + k)));
  return turns;
}

void no_slower_than_larger(const std::vector<int64_t>& sizes, std::vector<double>& rtt_s) {
  const std::vector<double> measured = rtt_s;
  for (size_t k = 0; k < sizes.size(); ++k)
    for (size_t j = 0; j < sizes.size(); ++j)
      if (sizes[j] >= sizes[k]) rtt_s[k] = std::min(rtt_s[k], measured[j]);
}

void fit_alpha_beta(const std::vector<int64_t>& sizes, const std::vector<double>& t, double* alpha, double* beta) {
  const Line fit = least_squares_line(sizes, t);
  *beta = fit.slope > 0 ? 1.0 / fit.slope : 0;
  *alpha = std::max(0.0, fit.intercept);
  // The smallest message is the better latency estimate when the fit's intercept is noisy.
  if (!sizes.empty() && sizes.front() <= 64) *alpha = std::min(*alpha > 0 ? *alpha : t.front(), t.front());
}

std::vector<LinkClass> classify_links(std::vector<PairLink>& pairs) {
  std::vector<PairLink*> sorted;
  for (auto& p : pairs) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->alpha_s < y->alpha_s; });
  size_t split = sorted.size();
  double best = 3.0;
  for (size_t i = 1; i < sorted.size(); ++i) {
    const double ratio = sorted[i]->alpha_s / std::max(sorted[i - 1]->alpha_s, 1e-9);
    if (ratio > best) best = ratio, split = i;
  }
  std::vector<LinkClass> out;
  for (int c = 0; c < 2; ++c) {
    const size_t lo = c == 0 ? 0 : split, hi = c == 0 ? split : sorted.size();
    if (lo >= hi) continue;
    LinkClass k;
    k.name = c == 0 ? "local" : "wide";
    std::vector<double> a, b;
    for (size_t i = lo; i < hi; ++i) {
      sorted[i]->cls = k.name;
      a.push_back(sorted[i]->alpha_s);
      if (sorted[i]->beta_Bps > 0) b.push_back(sorted[i]->beta_Bps);
    }
    k.alpha_s = upper_median(a), k.beta_Bps = upper_median(b), k.pairs = static_cast<int>(hi - lo);
    out.push_back(k);
  }
  return out;
}

namespace {

// Each pair's best round trip per message size: rtt[a][b][k] (a < b), filled by the lower rank of
// each pair and summed over the world. A barrier before each turn: the pairs of one turn are timed
// while no other pair sends (they would share a link's rate). Each pair's untimed warm-up round
// trip waits for the partner.
at::Tensor pair_round_trips(const Group& g, const ProbeConfig& c) {
  const int n = g.size, K = static_cast<int>(c.sizes.size());
  at::Tensor rtt = at::zeros({n, n, K}, at::kDouble);
  int tag = 0;
  for (const auto& turn : probe_turns(n, c.pairs_at_once)) {
    barrier(g);
    for (const auto& [a, b] : turn) {
      if (g.rank != a && g.rank != b) continue;
      const int peer = g.rank == a ? b : a;
      for (int k = 0; k < K; ++k) {
        at::Tensor msg = at::zeros({std::max<int64_t>(1, c.sizes[static_cast<size_t>(k)] / 4)}, at::kFloat);
        std::vector<double> times;
        const int warm = k == 0 ? 1 : 0;  // one round trip warms the pair's connection up
        for (int i = 0; i < c.repeats + warm; ++i) {
          const auto t = Clock::now();
          if (g.rank == a) {
            send_async(msg, peer, tag + k, g).wait();
            recv_async(msg, peer, tag + k, g).wait();
          } else {
            recv_async(msg, peer, tag + k, g).wait();
            send_async(msg, peer, tag + k, g).wait();
          }
          if (i >= warm) times.push_back(since(t));
        }
        if (g.rank == a) rtt[a][b][k] = *std::min_element(times.begin(), times.end());
      }
    }
    tag += K;
  }
  all_reduce_sum(rtt, g);
  return rtt;
}

// Each pair's link: its round trips and the α-β fit of their halves over the sizes.
std::vector<PairLink> fit_pairs(const at::Tensor& rtt, const ProbeConfig& c) {
  const int n = static_cast<int>(rtt.size(0)), K = static_cast<int>(c.sizes.size());
  std::vector<PairLink> pairs;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      PairLink p;
      p.a = a, p.b = b;
      for (int k = 0; k < K; ++k) p.rtt_s.push_back(rtt[a][b][k].item<double>());
      no_slower_than_larger(c.sizes, p.rtt_s);
      std::vector<double> one_way;
      for (double t : p.rtt_s) one_way.push_back(t / 2);
      fit_alpha_beta(c.sizes, one_way, &p.alpha_s, &p.beta_Bps);
      pairs.push_back(p);
    }
  return pairs;
}

// The collectives, into r.collectives: all-reduce and all-gather of 4 B and 1 MiB, a 16 MiB
// all-gather (the rate its bytes reach over the ring: ZeRO's gathers), and, where asked, the
// all-reduce as gradients travel (hierarchical / channels / bf16 per [dist]). Each: the median over
// the repeats of the slowest rank's time; one barrier before the first repeat (each collective ends
// nearly together on every rank) and one reduction of all times.
void probe_collectives(World& w, const ProbeConfig& c, ProbeResult& r) {
  const Group& g = w.world;
  const int n = g.size;
  auto timed = [&](const std::string& op, int64_t bytes, const std::function<void()>& run) {
    at::Tensor times = at::zeros({n, c.repeats}, at::kDouble);
    barrier(g);
    for (int i = 0; i < c.repeats; ++i) {
      const auto t0 = Clock::now();
      run();
      times[g.rank][i] = since(t0);
    }
    all_reduce_sum(times, g);
    at::Tensor slowest = std::get<0>(times.max(0));
    r.collectives.push_back({op, bytes, upper_median(std::vector<double>(slowest.data_ptr<double>(),
                                                                   slowest.data_ptr<double>() + c.repeats))});
  };
  if (c.collectives) {
    for (int64_t bytes : {int64_t{4}, int64_t{1} << 20}) {
      const int64_t numel = std::max<int64_t>(n, bytes / 4 / n * n);
      at::Tensor t = at::zeros({numel}, at::kFloat), out = at::zeros({numel}, at::kFloat);
      timed("all-reduce", bytes, [&] { all_reduce_sum(t, g); });
      timed("all-gather", bytes, [&] { all_gather_into(out, t.narrow(0, 0, numel / n), g); });
    }
    const int64_t numel = (int64_t{16} << 20) / 4 / n * n;
    at::Tensor shard = at::zeros({numel / n}, at::kFloat), out = at::zeros({numel}, at::kFloat);
    timed("all-gather", numel * 4, [&] { all_gather_into(out, shard, g); });
  }
  if (c.allreduce_mb.empty()) return;
  Group wan = new_group(w, "probe", g.ranks);
  make_wan_group(w, wan, c.wan);
  const std::string how = describe_wan(wan);
  for (double mb : c.allreduce_mb) {
    at::Tensor t = at::zeros({std::max<int64_t>(1, mib_bytes(mb) / 4)}, at::kFloat);
    all_reduce_sum(t, wan);  // warm-up: connections of the extra groups
    timed(how.empty() ? "all-reduce (flat)" : "all-reduce (" + how + ")", t.numel() * 4,
          [&] { all_reduce_sum(t, wan); });
  }
}

}  // namespace

ProbeResult probe_links(World& w, const ProbeConfig& c) {
  const auto started = Clock::now();
  ProbeResult r;
  r.world = w.world.size, r.sizes = c.sizes;
  r.pairs = fit_pairs(pair_round_trips(w.world, c), c);
  r.classes = classify_links(r.pairs);
  probe_collectives(w, c, r);
  r.elapsed_s = max(since(started), w.world);
  return r;
}

std::string probe_matrix(const ProbeResult& r) {
  std::string out = fmt::format("round-trip time, ms ({}-byte messages) / bandwidth, Mbit/s (fit over {} sizes):\n",
                                r.sizes.front(), r.sizes.size());
  out += "      ";
  for (int b = 0; b < r.world; ++b) out += fmt::format("{:>16}", fmt::format("rank {}", b));
  out += "\n";
  for (int a = 0; a < r.world; ++a) {
    out += fmt::format("{:>6}", fmt::format("{}", a));
    for (int b = 0; b < r.world; ++b) {
      if (a == b) {
        out += fmt::format("{:>16}", "-");
        continue;
      }
      const PairLink& p = *std::find_if(r.pairs.begin(), r.pairs.end(), [&](const PairLink& x) {
        return x.a == std::min(a, b) && x.b == std::max(a, b);
      });
      out += fmt::format("{:>16}", fmt::format("{:.2f} / {:.0f}", p.rtt_s.front() * 1e3, p.beta_Bps * 8 / 1e6));
    }
    out += "\n";
  }
  for (const LinkClass& k : r.classes)
    out += fmt::format("class {}: {} pairs, alpha {:.3f} ms, beta {:.0f} Mbit/s\n", k.name, k.pairs, k.alpha_s * 1e3,
                       k.beta_Bps * 8 / 1e6);
  for (const CollectiveTiming& t : r.collectives)
    out += fmt::format("{} of {} bytes over {} ranks: {:.3f} ms\n", t.op, t.bytes, r.world, t.seconds * 1e3);
  out += fmt::format("probe took {:.1f} s\n", r.elapsed_s);
  return out;
}

WideLink widest_class(const ProbeResult& r) {
  WideLink w;
  for (const LinkClass& k : r.classes)
    if (k.alpha_s >= w.alpha_s) w = {k.alpha_s, k.beta_Bps};
  return w;
}

std::string probe_json(const ProbeResult& r) {
  nlohmann::json j;
  j["world"] = r.world;
  j["sizes"] = r.sizes;
  for (const PairLink& p : r.pairs)
    j["pairs"].push_back({{"a", p.a}, {"b", p.b}, {"rtt_s", p.rtt_s}, {"alpha_s", p.alpha_s}, {"beta_Bps", p.beta_Bps},
                          {"class", p.cls}});
  for (const LinkClass& k : r.classes)
    j["classes"][k.name] = {{"alpha_s", k.alpha_s}, {"beta_Bps", k.beta_Bps}, {"pairs", k.pairs}};
  for (const CollectiveTiming& t : r.collectives)
    j["collectives"].push_back({{"op", t.op}, {"bytes", t.bytes}, {"seconds", t.seconds}});
  j["elapsed_s"] = r.elapsed_s;
  return j.dump(1) + "\n";
}

}  // namespace slm::comm
