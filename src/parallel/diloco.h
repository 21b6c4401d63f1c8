// parallel/diloco.h: DiLoCo and Streaming DiLoCo across sites (configured by parallel/sync_config.h).
// Owns: OuterSync and its verbs, the outer update and the fragment schedule (pure, unit-tested).
// Inside a site, the plan's data-parallel group (`site`: this rank's stage and tp slice in every
// replica of the site) trains every step; the sites never exchange gradients. Every rank keeps,
// for its 1/L piece of each fragment (L = ranks of `site`; with ZeRO 3 its own shard of it), the outer parameters θ_outer, the
// outer momentum and the compression error. Fragment f of F starts a sync after inner steps
// f·H/F + k·H (k >= 1): each rank sends its piece of Δ = θ_outer − θ across the sites over
// `cross` (the same piece in every site: 1/L of the fragment per rank, as in the hierarchical
// all-reduce), compressed with error feedback; the sites' mean Δ updates θ_outer by SGD with
// Nesterov momentum; `delay` steps later the piece becomes θ_outer (or, with delay > 0,
// mix·θ + (1−mix)·θ_outer) and is all-gathered inside the site. The cross-site transfer runs in
// the background meanwhile (c10d's async work). With one site nothing crosses, and with outer_lr 1
// and momentum 0 the outer step just takes the site's parameters.
// Worked example: 2 sites x 2 ranks (ranks 0,1 | 2,3), one model of 1000 values, F = 1, H = 10:
// after step 10 rank 0 sends Δ[0:500) to rank 2 and rank 1 sends Δ[500:1000) to rank 3; each
// updates its half of θ_outer, copies it into the parameters, and the site's pair all-gather.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/group.h"
#include "parallel/flat.h"
#include "parallel/sync_config.h"

namespace slm::parallel {

struct OuterSync;  // diloco.cpp

// params: this rank's whole flat parameter buffer (data_parallel.h full_params); its parameters
// are views of it and stay so. layout: its layout (names say which block a range belongs to).
// θ_outer starts as the current parameters. UserError if fragments do not divide n_layer.
std::shared_ptr<OuterSync> make_outer_sync(const SyncConfig& c, const at::Tensor& params, const FlatLayout& layout,
                                           int64_t n_layer, const comm::Group& site, const comm::Group& cross);

// The same with ZeRO 3 inside the site: `shard` is this rank's parameter shard (param_shard) and
// `segments` where its pieces sit in the flat vector; the rank's share of a fragment is its own
// pieces (the same ones on every site), so a merge needs no all-gather inside the site.
std::shared_ptr<OuterSync> make_sharded_outer_sync(const SyncConfig& c, const at::Tensor& shard,
                                                   const std::vector<Segment>& segments, const FlatLayout& layout,
                                                   int64_t n_layer, const comm::Group& site, const comm::Group& cross);

// UserError on every rank unless all sites hold the same outer parameters (checksum compared
// across sites; a known pitfall is sites that start from different models).
void check_same_outer(const OuterSync& o);

// After the inner step that made `step` steps: starts the syncs that are due and merges those whose
// delay is over. Returns the number of fragments merged.
int after_inner_step(OuterSync& o, int64_t step);
// At the end of training (after after_inner_step of the last step): the syncs in flight arrive,
// then every fragment not already equal to θ_outer is synced now and taken exactly, so that every
// site ends with the same model (the one checkpoints and exports hold; checked by a checksum
// across the sites). Returns the fragments merged.
int finish_outer(OuterSync& o, int64_t step);

// The factor this site's Δ is multiplied by from the next sync on (1: the sites' plain mean;
// sync.by = "time": parallel/sync_by_time.h delta_weight).
void set_delta_weight(OuterSync& o, double w);

int site_index(const OuterSync& o);
int num_sites(const OuterSync& o);
// One line for the log: sites, H, outer optimizer, fragments, delay, compression.
std::string describe(const OuterSync& o);

// What a checkpoint keeps of a rank's outer state. pending: (fragment, merge step) of the syncs
// still in flight, whose outer update is already in theta.
struct OuterState {
  at::Tensor theta, momentum, error;
  std::vector<std::pair<int64_t, int64_t>> pending;
};
// Waits for the syncs in flight and applies them to θ_outer (not yet to the parameters), then
// returns the state (views of o's buffers).
OuterState settle_outer_state(OuterSync& o);
// UserError if the sizes are not this rank's.
void restore_outer_state(OuterSync& o, const OuterState& s);
// θ_outer = the current parameters, no momentum, error or syncs in flight (after resuming from a
// checkpoint of ordinary training).
void reset_outer(OuterSync& o);

// Pure parts, for tests:
// m = mu·m + delta; theta -= lr·(delta + mu·m)  (PyTorch's SGD with nesterov=True).
void outer_nesterov(at::Tensor theta, at::Tensor momentum, const at::Tensor& delta, double lr, double mu);
// Whether fragment f of F starts a sync after inner step `step` (offsets f·H/F, period H).
bool sync_due(int64_t step, int64_t fragment, int64_t fragments, int64_t inner_steps);
// [begin, end) of each fragment in a flat layout: blocks split into F equal groups of layers (by
// the "h.<layer>." names), embeddings with the first, the final LayerNorm with the last. A rank
// that holds no layer of a fragment gets an empty range. UserError if F does not divide n_layer.
std::vector<std::pair<int64_t, int64_t>> fragment_ranges(const FlatLayout& l, int64_t n_layer, int64_t fragments);

}  // namespace slm::parallel
