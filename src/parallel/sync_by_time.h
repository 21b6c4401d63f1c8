// parallel/sync_by_time.h: DiLoCo with `sync.by = "time"`: sites of different speed take
// different numbers of inner steps between two outer syncs, so that the fast ones do not wait.
// Owns the arithmetic (pure functions, no torch, no c10d); train/step.cpp applies it.
// A *round* is the inner_steps (H) global steps between two syncs. In a round site s takes n_s >= H
// inner steps, spread over the round's global steps as evenly as integers allow (position j of the
// round: floor((j+1) n_s / H) - floor(j n_s / H) steps, 1 or more). The slowest site takes H; a
// site k times faster about k H (at most max_speedup x H). n_s comes from the sites' measured time
// per inner step in the round before (all ranks agree on it at the sync), or from fixed relative
// speeds (`sync.site_speeds`). At the sync each site's pseudo-gradient counts by its tokens:
// weight n_s / sum(n) instead of 1 / S. Worked example: H = 4, site b twice as fast as site a:
// n = (4, 8); per global step a takes 1 inner step and b 2; Δ = (4 Δ_a + 8 Δ_b) / 12.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slm::parallel {

// "1,2.5" -> {1, 2.5}. UserError unless every entry is a finite number > 0.
std::vector<double> parse_site_speeds(const std::string& text);
// Inner steps of site s in a round from the sites' relative speeds (higher = faster): H for the
// slowest, round(H x speed / slowest speed) for the others, at most max_speedup x H.
std::vector<int64_t> round_steps(const std::vector<double>& speeds, int64_t inner_steps, double max_speedup);
// Inner steps a site with n per round takes at position j (0..H-1) of the round.
int64_t steps_at(int64_t n, int64_t inner_steps, int64_t j);
// Inner steps it has taken in the first `pos` positions of the round.
int64_t steps_before(int64_t n, int64_t inner_steps, int64_t pos);
// The factor that turns the sites' plain mean of pseudo-gradients into the token-weighted one for
// site `site`, whose Δ covers done[site] inner steps (of equal tokens): S x done[s] / sum(done).
// 1 when every site did the same or nobody did anything.
double delta_weight(const std::vector<int64_t>& done, int site);

}  // namespace slm::parallel
