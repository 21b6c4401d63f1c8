// planner/search.cpp: see search.h.
#include "planner/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <set>

#include "planner/comm_cost.h"
#include "planner/stage_split.h"
#include "util/error.h"

namespace slm::planner {
namespace {

using parallel::Plan;

// Stage k of pp*v on consecutive plan ranks: pipe k % pp holds [pipe*dp*tp, (pipe+1)*dp*tp).
Plan make_plan(int pp, int tp, int dp, int v, const std::vector<int64_t>& cuts, int64_t M,
               const std::vector<int64_t>& mb, const std::string& schedule) {
  Plan p;
  p.pp = pp, p.dp = dp, p.virtual_stages = v, p.micro_batches = M, p.micro_batch = mb, p.schedule = schedule;
  for (int k = 0; k < pp * v; ++k) {
    parallel::StagePlan s;
    s.first = cuts[static_cast<size_t>(k)], s.end = cuts[static_cast<size_t>(k) + 1], s.tp = tp;
    const int pipe = k % pp;
    for (int r = 0; r < dp * tp; ++r) s.ranks.push_back(pipe * dp * tp + r);
    p.stages.push_back(s);
  }
  return p;
}

std::vector<int64_t> even_cuts(int64_t n_layer, int stages) {
  std::vector<int64_t> cuts{0};
  for (int s = 0; s < stages; ++s) cuts.push_back(cuts.back() + n_layer / stages + (s < n_layer % stages ? 1 : 0));
  return cuts;
}

// n sequences over replicas in proportion to their speed (largest remainder), each at least 1.
std::vector<int64_t> proportional(int64_t n, const std::vector<double>& speed) {
  const size_t R = speed.size();
  double total = 0;
  for (double s : speed) total += s;
  std::vector<int64_t> out(R, 1);
  int64_t left = n - static_cast<int64_t>(R);
  std::vector<std::pair<double, size_t>> rem;
  for (size_t r = 0; r < R; ++r) {
    const double want = std::max(0.0, speed[r] / total * static_cast<double>(n) - 1);
    const int64_t whole = std::min(left, static_cast<int64_t>(std::floor(want)));
    out[r] += whole, left -= whole;
    rem.push_back({want - std::floor(want), r});
  }
  std::sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; left > 0; i = (i + 1) % R, --left) ++out[rem[i].second];
  return out;
}

std::vector<std::vector<int>> site_subsets(const Cluster& c, bool subsets) {
  const int S = static_cast<int>(c.sites.size());
  std::vector<std::vector<int>> out;
  std::vector<int> all(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) all[static_cast<size_t>(s)] = s;
  out.push_back(all);
  if (!subsets || S == 1) return out;
  if (S <= 6) {
    for (int mask = 1; mask < (1 << S) - 1; ++mask) {
      std::vector<int> v;
      for (int s = 0; s < S; ++s)
        if (mask & (1 << s)) v.push_back(s);
      out.push_back(v);
    }
    return out;
  }
  for (int s = 0; s < S; ++s) {
    out.push_back({s});
    std::vector<int> rest;
    for (int t = 0; t < S; ++t)
      if (t != s) rest.push_back(t);
    out.push_back(rest);
  }
  return out;
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

struct Searcher {
  const CostInputs& in;
  const SearchOptions& o;
  std::vector<Ranked> all;  // every prediction that was made
  int64_t evaluated = 0;

  // Whether it fits the ranks' memory.
  bool evaluate(const Candidate& c) {
    ++evaluated;
    all.push_back({c, predict(c, in)});
    return all.back().p.fits;
  }

  // ZeRO 3 moves more bytes than ZeRO 2 and recomputes every block: with pipeline stages (many
  // structures) it is costed only where no ZeRO 2 variant of the structure fits.
  static bool zero3_wanted(const Plan& p, bool zero2_fits) { return p.pp == 1 || !zero2_fits; }

  // Every reduction/ZeRO variant of one structural candidate (ZeRO from min_zero on).
  void variants(Candidate base, int min_zero = 0) {
    const Plan& p = base.plan;
    // Does a dp group span sites with equal ranks in each (hierarchical possible)?
    std::vector<int> g;
    for (int r = 0; r < p.dp; ++r) g.push_back(base.ranks[static_cast<size_t>(parallel::rank_at(p, 0, r, 0))]);
    const RingLinks ring = ring_links(*in.cluster, g);
    std::map<int, int> per_site;
    for (int r : base.ranks) ++per_site[in.cluster->ranks[static_cast<size_t>(r)].site];
    bool even = per_site.size() > 1;
    for (auto& [s, n] : per_site) even = even && n == per_site.begin()->second;
    base.channels = ring.crosses_sites ? channels_for(ring.slowest) : 1;
    std::vector<std::pair<int64_t, bool>> wans{{0, false}};
    if (ring.crosses_sites && even) {
      wans.push_back({per_site.begin()->second, false});
      if (o.allow_lossy) wans.push_back({per_site.begin()->second, true});
    }
    if (o.allow_lossy && ring.crosses_sites && even)
      diloco_variants(base, per_site.begin()->second, static_cast<int>(per_site.size()), min_zero);
    bool zero2_fits = false;
    for (int z = min_zero; z <= (p.dp > 1 ? 3 : 0); ++z) {
      if (z == 3 && !zero3_wanted(p, zero2_fits)) break;
      for (auto [rps, bf16] : wans)
        for (bool site_scope : {false, true}) {
          if (site_scope && (z == 0 || rps == 0)) continue;
          Candidate c = base;
          c.plan.zero = z, c.ranks_per_site = rps, c.compress = bf16, c.zero_site = site_scope;
          const bool fits = evaluate(c);
          zero2_fits = zero2_fits || (z == 2 && fits);
        }
    }
  }

  // DiLoCo across the sites (lossy): the same structure with replicas laid out site by site (when
  // every site holds whole replicas), ZeRO 0-3 inside each site (as in step mode).
  void diloco_variants(Candidate base, int64_t ranks_per_site, int sites, int min_zero) {
    base.plan = parallel::replica_major(base.plan);
    try {
      parallel::replica_sites(base.plan, ranks_per_site);
    } catch (const UserError&) {
      return;  // a replica would span sites
    }
    base.ranks_per_site = ranks_per_site, base.diloco_steps = o.diloco_steps, base.channels = 1;
    const int max_zero = base.plan.dp <= sites ? 0 : 3;  // one replica per site: nothing to shard inside it
    bool zero2_fits = false;
    for (int z = min_zero; z <= max_zero; ++z) {
      if (z == 3 && !zero3_wanted(base.plan, zero2_fits)) break;
      Candidate c = base;
      c.plan.zero = z;
      zero2_fits = evaluate(c) && z == 2;
    }
  }

  // Micro-batches per replica for one micro-batch count: even, and by replica speed.
  std::vector<std::vector<int64_t>> splits(Candidate c, int64_t per_step) {
    const int dp = c.plan.dp;
    std::vector<std::vector<int64_t>> out;
    if (per_step % dp == 0) out.push_back(std::vector<int64_t>(static_cast<size_t>(dp), per_step / dp));
    c.plan.micro_batch.assign(static_cast<size_t>(dp), std::max<int64_t>(1, per_step / dp));
    const std::vector<int> rep_of = representative_of(c, in);
    std::vector<double> speed(static_cast<size_t>(dp), 0.0);
    for (int r = 0; r < dp; ++r) {
      const int same = rep_of[static_cast<size_t>(r)];
      if (same != r) {  // costs like an earlier replica
        speed[static_cast<size_t>(r)] = speed[static_cast<size_t>(same)];
        continue;
      }
      double t = 0;
      for (size_t k = 0; k < c.plan.stages.size(); ++k) t = std::max(t, stage_compute_s(c, in, static_cast<int>(k), r));
      speed[static_cast<size_t>(r)] = 1 / std::max(t, 1e-12);
    }
    auto prop = proportional(per_step, speed);
    if (out.empty() || prop != out[0]) out.push_back(prop);
    return out;
  }

  // Candidates of one structure; `memory`: how they save activation memory (none, sequence
  // parallelism, recomputation).
  enum class Saving { none, sequence_parallel, recompute };
  void structure(const std::vector<int>& ranks, int pp, int tp, int dp, Saving memory) {
    const int64_t B = o.batch_size, L = in.model.n_layer;
    std::vector<int64_t> Ms;
    for (int64_t m = 1; m <= 64 && B / m >= dp; m *= 2)
      if (B % m == 0) Ms.push_back(m);
    for (int64_t M : Ms) {
      const int64_t per_step = B / M;
      Candidate c;
      c.ranks = ranks, c.recompute = memory == Saving::recompute;
      c.sequence_parallel = memory == Saving::sequence_parallel;
      c.plan = make_plan(pp, tp, dp, 1, even_cuts(L, pp), M, std::vector<int64_t>(static_cast<size_t>(dp), 1),
                         pp == 1 ? "none" : "1f1b");
      for (const auto& mb : splits(c, per_step)) {
        c.plan.micro_batch = mb;
        if (pp == 1) {
          variants(c);
          continue;
        }
        // 1F1B with the layer split that balances the stages within their memory: ZeRO 2's (the
        // least without recomputing), else ZeRO 3's (whose split balances the recomputing stages).
        Candidate probe = c;
        const std::vector<int> rep_of = representative_of(probe, in);
        std::vector<int64_t> cuts;
        for (int z = 2; z <= (dp > 1 ? 3 : 2) && cuts.empty(); ++z) {
          probe.plan.zero = z;
          std::map<std::pair<int, int64_t>, double> known;  // a stage's cost depends on its layer count
          cuts = split_layers(L, pp, [&](int s, int64_t a, int64_t e) {
            const auto [it, fresh] = known.try_emplace({s, e - a}, 0.0);
            if (!fresh) return it->second;
            auto& st = probe.plan.stages[static_cast<size_t>(s)];
            st.first = a, st.end = e;
            double t = 0;
            if (stage_memory_over(probe, in, s) > 0) t = std::numeric_limits<double>::infinity();
            for (int r = 0; r < dp && t < std::numeric_limits<double>::infinity(); ++r)
              if (rep_of[static_cast<size_t>(r)] == r) t = std::max(t, stage_compute_s(probe, in, s, r));
            return it->second = t;
          });
        }
        if (!cuts.empty()) {
          Candidate d = c;
          d.plan = make_plan(pp, tp, dp, 1, cuts, M, mb, "1f1b");
          variants(d, probe.plan.zero == 3 ? 3 : 0);  // a split only ZeRO 3 fits: ZeRO 0-2 cannot
        }
        if (M % pp == 0 && L >= 2 * pp) {  // interleaved, 2 chunks per rank, even layers
          Candidate d = c;
          d.plan = make_plan(pp, tp, dp, 2, even_cuts(L, 2 * pp), M, mb, "interleaved");
          variants(d);
        }
      }
    }
  }

  void run() {
    const Cluster& cl = *in.cluster;
    for (const std::vector<int>& sites : site_subsets(cl, o.subsets)) {
      if (o.keep_rank >= 0 &&
          std::find(sites.begin(), sites.end(), cl.ranks.at(static_cast<size_t>(o.keep_rank)).site) == sites.end())
        continue;
      std::vector<int> ranks;
      for (int r = 0; r < cl.world(); ++r)
        if (std::find(sites.begin(), sites.end(), cl.ranks[static_cast<size_t>(r)].site) != sites.end()) ranks.push_back(r);
      const int N = static_cast<int>(ranks.size());
      for (int pp : divisors(N)) {
        if (pp > in.model.n_layer || pp > 32) continue;
        for (int tp : divisors(N / pp)) {
          if (tp > 8 || in.model.n_head % tp != 0 || in.model.vocab_padded % tp != 0) continue;
          const int dp = N / pp / tp;
          if (dp > o.batch_size) continue;
          // Where memory demands it, the cheapest saving that fits: with tp sequence parallelism (no
          // extra compute) before recomputation (a forward more).
          std::vector<Saving> savings = {Saving::none, Saving::recompute};
          if (tp > 1) savings.insert(savings.begin() + 1, Saving::sequence_parallel);
          for (const Saving s : savings) {
            const size_t before = all.size();
            structure(ranks, pp, tp, dp, s);
            bool fits = false;
            for (size_t i = before; i < all.size(); ++i) fits = fits || all[i].p.fits;
            if (fits) break;
          }
        }
      }
    }
  }
};

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

}  // namespace

int channels_for(const Link& l) {
  const double bdp = l.beta_Bps * 2 * l.alpha_s;
  return static_cast<int>(std::clamp<double>(std::ceil(bdp / (2 << 20)), 1, 8));
}

std::string sites_used(const Cluster& c, const std::vector<int>& ranks) {
  std::vector<std::string> names;
  for (int r : ranks) {
    const std::string& n = c.sites[static_cast<size_t>(c.ranks[static_cast<size_t>(r)].site)];
    if (names.empty() || names.back() != n) names.push_back(n);
  }
  return fmt::format("{}", fmt::join(names, "+"));
}

bool better(const Prediction& a, const Prediction& b, const std::string& objective) {
  if (objective == "cost" && a.tokens_per_dollar != b.tokens_per_dollar) return a.tokens_per_dollar > b.tokens_per_dollar;
  return a.step_s < b.step_s;
}

SearchResult search_plans(const CostInputs& in_given, const SearchOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  CostInputs in = in_given;
  if (in.rank_class.empty()) assign_rank_classes(in);
  Searcher s{in, o, {}, 0};
  s.run();
  SearchResult r;
  r.evaluated = s.evaluated;
  auto cmp = [&](const Ranked& a, const Ranked& b) { return better(a.p, b.p, o.objective); };
  if (s.all.empty())  // e.g. thousands of ranks for a global batch of 16
    throw UserError(fmt::format("plan auto: no layout of the {} ranks fits the global batch {} ({} layers, {} heads: "
                                "at most 32 stages and tp 8); use fewer ranks or a larger batch.batch_size",
                                in.cluster->world(), o.batch_size, in.model.n_layer, in.model.n_head));
  std::vector<Ranked> fit;
  const Ranked* tightest = nullptr;  // the candidate that misses its cap by the least
  for (const Ranked& c : s.all) {
    if (c.p.fits) fit.push_back(c);
    else if (!tightest || c.p.tightest_over_bytes < tightest->p.tightest_over_bytes) tightest = &c;
  }
  if (fit.empty()) {
    const Cluster& cl = *in.cluster;
    const RankSpec& rs = cl.ranks[static_cast<size_t>(tightest->p.tightest_rank)];
    throw UserError(fmt::format(
        "plan auto: no layout fits; the closest ({}) needs {} on rank {} (site {}, {}), {} over its {} (use more "
        "ranks or memory, a shorter sequence or a smaller batch)",
        describe_candidate(tightest->c), gib(tightest->p.tightest_over_bytes + tightest->p.tightest_cap_bytes),
        tightest->p.tightest_rank, cl.sites[static_cast<size_t>(rs.site)], rs.device, gib(tightest->p.tightest_over_bytes),
        gib(tightest->p.tightest_cap_bytes)));
  }
  std::stable_sort(fit.begin(), fit.end(), cmp);
  const size_t K = static_cast<size_t>(std::max(1, o.top));
  std::set<std::string> shown;
  for (const Ranked& c : fit) {
    if (r.top.size() >= K) break;
    r.top.push_back(c);
    shown.insert(family_of(c.c) + " on " + sites_used(*in.cluster, c.c.ranks));
  }
  // The best of every other family: fitting ones by the objective, else the one closest to fitting.
  std::map<std::string, const Ranked*> best;
  for (const Ranked& c : s.all) {
    const std::string f = family_of(c.c) + " on " + sites_used(*in.cluster, c.c.ranks);
    if (shown.count(f)) continue;
    auto it = best.find(f);
    const bool take = it == best.end() ||
                      (c.p.fits && (!it->second->p.fits || cmp(c, *it->second))) ||
                      (!c.p.fits && !it->second->p.fits && c.p.tightest_over_bytes < it->second->p.tightest_over_bytes);
    if (take) best[f] = &c;
  }
  const Prediction& top = r.top[0].p;
  for (const auto& [f, c] : best) {
    std::string why;
    if (!c->p.fits)
      why = fmt::format("out of memory on rank {} (needs {}, has {})", c->p.tightest_rank,
                        gib(c->p.tightest_over_bytes + c->p.tightest_cap_bytes), gib(c->p.tightest_cap_bytes));
    else if (o.objective == "cost" && top.tokens_per_dollar > 0)
      why = fmt::format("{:.0f}% fewer tokens per dollar", 100 * (1 - c->p.tokens_per_dollar / top.tokens_per_dollar));
    else
      why = fmt::format("slower by {:.0f}%", 100 * (c->p.step_s / top.step_s - 1));
    r.losers.push_back({f, *c, why});
  }
  std::stable_sort(r.losers.begin(), r.losers.end(), [&](const Loser& a, const Loser& b) {
    if (a.best.p.fits != b.best.p.fits) return a.best.p.fits;
    return cmp(a.best, b.best);
  });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Ranked study_heuristic(const CostInputs& in, const SearchOptions& o) {
  const Cluster& cl = *in.cluster;
  double worst_rtt = 0;
  for (const auto& row : cl.link)
    for (const Link& l : row) worst_rtt = std::max(worst_rtt, 2 * l.alpha_s);
  Candidate c;
  const int64_t B = o.batch_size, L = in.model.n_layer;
  if (cl.sites.size() == 1 || worst_rtt < 5e-3) {
    for (int r = 0; r < cl.world(); ++r) c.ranks.push_back(r);
    const int dp = cl.world();
    if (dp > B)  // every rank a replica of at least one sequence
      throw UserError(fmt::format("plan auto: the global batch {} is smaller than the {} ranks (batch.batch_size must be "
                                  "at least the number of ranks the layouts replicate over)", B, dp));
    const int64_t mb = std::max<int64_t>(1, std::min<int64_t>(o.micro_batch, B / dp));
    c.plan = make_plan(1, 1, dp, 1, {0, L}, B / (mb * dp), std::vector<int64_t>(static_cast<size_t>(dp), mb), "none");
  } else {
    // The two largest sites (the study's at most 2 stages), one stage each, tp = the smaller count.
    std::vector<int> order(cl.sites.size());
    for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cl.ranks_in_site(a) > cl.ranks_in_site(b); });
    const int a = std::min(order[0], order[1]), b = std::max(order[0], order[1]);
    int tp = std::min(cl.ranks_in_site(a), cl.ranks_in_site(b));
    while (tp > 1 && (in.model.n_head % tp != 0 || in.model.vocab_padded % tp != 0)) --tp;
    for (int site : {a, b}) {
      int taken = 0;
      for (int r = 0; r < cl.world() && taken < tp; ++r)
        if (cl.ranks[static_cast<size_t>(r)].site == site) c.ranks.push_back(r), ++taken;
    }
    const int64_t M = B % 4 == 0 ? 4 : 1;
    c.plan = make_plan(2, tp, 1, 1, even_cuts(L, 2), M, {B / M}, "1f1b");
  }
  return {c, predict(c, in)};
}

}  // namespace slm::planner
