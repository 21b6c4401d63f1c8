// parallel/plan_groups.cpp: see plan_groups.h.
#include "parallel/plan_groups.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "util/error.h"

namespace slm::parallel {

comm::ProcessGroups make_plan_groups(comm::World& w, const Plan& p, const comm::WanOptions& wan) {
  const int me = w.world.rank;
  const RankRole role = role_of(p, me);
  comm::ProcessGroups g;
  g.world = w.world;
  g.shape = {{"pp", "dp", "tp"}, {p.pp, p.dp, p.stages[static_cast<size_t>(role.pipe)].tp}};
  auto join = [&](const std::string& name, std::vector<int> ranks, comm::Group& out, bool own = false) {
    std::sort(ranks.begin(), ranks.end());
    if (std::find(ranks.begin(), ranks.end(), me) == ranks.end()) return;
    out = ranks.size() == 1 ? comm::Group{name, 0, 1, {me}, nullptr, nullptr} : comm::new_group(w, name, ranks, own);
  };
  for (int k = 0; k < p.pp; ++k)
    for (int r = 0; r < p.dp; ++r) {
      std::vector<int> ranks;
      for (int j = 0; j < p.stages[static_cast<size_t>(k)].tp; ++j) ranks.push_back(rank_at(p, k, r, j));
      join("tp", ranks, g.tp);
    }
  // DiLoCo: dp groups inside each site; `outer` joins the replicas of the same index in each site.
  std::vector<int> site(static_cast<size_t>(p.dp), 0), index(static_cast<size_t>(p.dp), 0);
  if (p.sync_ranks_per_site > 0) {
    if (p.sync_ranks_per_site > w.world.size)  // 3 per site on 2 ranks once ran as one site, silently
      throw UserError(fmt::format("sync: dist.ranks_per_site = {} is more than the job's {} ranks: a site must be whole",
                                  p.sync_ranks_per_site, w.world.size));
    site = replica_sites(p, p.sync_ranks_per_site);
    std::map<int, int> seen;
    for (int r = 0; r < p.dp; ++r) index[static_cast<size_t>(r)] = seen[site[static_cast<size_t>(r)]]++;
  }
  for (int k = 0; k < p.pp; ++k)
    for (int j = 0; j < p.stages[static_cast<size_t>(k)].tp; ++j) {
      std::map<int, std::vector<int>> dp_of_site, outer_of_index;
      for (int r = 0; r < p.dp; ++r) {
        dp_of_site[site[static_cast<size_t>(r)]].push_back(rank_at(p, k, r, j));
        outer_of_index[index[static_cast<size_t>(r)]].push_back(rank_at(p, k, r, j));
      }
      for (auto& [s, ranks] : dp_of_site) join("dp", ranks, g.dp);
      if (p.sync_ranks_per_site > 0)
        for (auto& [i, ranks] : outer_of_index) join("outer", ranks, g.outer, /*own=*/true);  // runs in the background
    }
  if (p.sync_ranks_per_site == 0) comm::make_wan_group(w, g.dp, wan);  // hierarchical / multi-channel gradient all-reduce
  g.outer.name = "outer";
  g.site = g.world;
  if (p.sync_ranks_per_site > 0) {
    std::vector<int> mine;
    for (int r = 0; r < w.world.size; ++r)
      if (r / p.sync_ranks_per_site == me / p.sync_ranks_per_site) mine.push_back(r);
    join("site", mine, g.site);
  }
  g.pp = {"pp", me, 1, {me}, nullptr, nullptr};
  if (p.stages.size() > 1) {
    std::vector<int> all(static_cast<size_t>(w.world.size));
    for (int r = 0; r < w.world.size; ++r) all[static_cast<size_t>(r)] = r;
    g.pp = comm::new_group(w, "pp", all, /*own_connections=*/true);
  }
  return g;
}

}  // namespace slm::parallel
