// planner/search.h: the layout search: every way to run the model on the cluster (or on a subset
// of its sites) that the runtime supports, predicted by the cost model, best first. Owns:
// SearchOptions, Ranked, Loser, SearchResult, search_plans, study_heuristic, channels_for.
// Pure: no torch, no c10d.
// Space: site subsets (all of them up to 6 sites; else all, each one alone, all but one) x every
// pp x tp x dp factorisation of their ranks (tp dividing n_head and the padded vocabulary) with
// stages on consecutive ranks, site by site (tp inside a site where it fits, stage boundaries on
// site boundaries when pp matches the sites) x micro-batch counts (powers of two dividing the
// batch) x per-replica micro-batches (even, or proportional to replica speed) x schedule (none;
// 1f1b with the layer split of planner/stage_split.h; interleaved with 2 chunks) x ZeRO 0-3 and
// its scope x flat / hierarchical / (with allow_lossy) bf16 reduction across sites or DiLoCo
// (replicas laid out site by site, ZeRO 0-3 inside the site); activation
// recomputation when nothing fits without it. Identical ranks are simulated once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/cost_model.h"

namespace slm::planner {

struct SearchOptions {
  std::string objective = "time";  // time (step time) | cost (tokens per dollar)
  bool allow_lossy = false;        // bf16 gradients across sites, DiLoCo
  int64_t diloco_steps = 50;       // H of the DiLoCo candidates (sync.inner_steps)
  bool subsets = true;             // may leave sites out ("fewer GPUs")
  int keep_rank = -1;              // a cluster rank whose site every subset keeps (-1 = none)
  int64_t batch_size = 0;          // global batch, sequences (fixed: every plan trains the same model)
  int64_t micro_batch = 0;         // the configuration's micro-batch (the heuristic's default)
  int top = 5;
};

struct Ranked {
  Candidate c;
  Prediction p;
};
struct Loser {
  std::string family;  // family_of + the sites used
  Ranked best;         // its best member
  std::string why;     // "slower by 35%" | "out of memory on rank 3 (needs 9.1 GiB, has 8 GiB)"
};
struct SearchResult {
  std::vector<Ranked> top;    // fitting candidates, best first
  std::vector<Loser> losers;  // the best of each other family, and why it lost
  int64_t evaluated = 0;      // predictions made
  double seconds = 0;
};

// UserError (one line) when nothing fits: names the tightest rank and by how much.
SearchResult search_plans(const CostInputs& in, const SearchOptions& o);
// The reference study's rule, predicted by the same model: data parallel over every rank when all
// links are fast (RTT < 5 ms), else pipeshard with one stage per site (the two largest sites, tp
// = their ranks per site), 1F1B, 4 micro-batches, layers split evenly.
Ranked study_heuristic(const CostInputs& in, const SearchOptions& o);
// Connections that keep the link's bandwidth-delay product in flight (~2 MiB each), 1..8: the
// runtime's dist.channels = 0 rule (comm/hierarchy.h resolve_wan), for a dp group's slowest link.
int channels_for(const Link& slowest);
// "sites a+b" for the sites a candidate uses.
std::string sites_used(const Cluster& c, const std::vector<int>& ranks);
// Is `a` better than `b` under the objective?
bool better(const Prediction& a, const Prediction& b, const std::string& objective);

}  // namespace slm::planner
