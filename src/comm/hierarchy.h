// comm/hierarchy.h: WAN-aware all-reduce for groups that span sites joined by slow links.
// Owns: WanOptions (part of the [dist] section), make_wan_group (attach the extra groups to a
// Group), and the all-reduce paths that all_reduce_sum_async takes for such a group:
//  - hierarchical: ranks are numbered site by site (ranks_per_site); a tensor is summed inside
//    each site (fast links), each of the site's L ranks then all-reduces its 1/L shard with the
//    ranks of the same position in the other sites (the only cross-site traffic: 2(S-1) one-way
//    delays for S sites instead of 2(P-1) for P ranks, and 1/L of the bytes per rank), and the
//    shards are all-gathered inside the site again;
//  - compress: the cross-site step sends bf16 (all-gather of the shards' bf16 bits, summed in
//    fp32 in the same order on every rank): half the bytes, ~3 significant digits per gradient;
//  - channels: a large tensor (with hierarchy: the cross-site shard) is cut into chunks that travel concurrently over several process
//    groups of the same ranks (Gloo keeps ~2 MiB in flight per connection, so on a long path one
//    connection moves ~1 MiB per one-way delay; several connections multiply that).
// Worked example: 4 ranks, ranks_per_site 2: local groups {0,1} {2,3}, cross groups {0,2} {1,3};
// rank 1 sums with 0, all-reduces the second half with 3, gathers the first half from 0.
#pragma once
#include <cstdint>
#include <string>

#include "comm/group.h"

namespace slm::comm {

struct World;

// The slowest link class of a probe: one-way latency and bandwidth (zeros = unknown).
struct WideLink {
  double alpha_s = 0, beta_Bps = 0;
};

struct WanOptions {
  int64_t ranks_per_site = 0;  // > 0: hierarchical all-reduce for data-parallel gradients
  bool compress = false;       // bf16 on the cross-site step (needs ranks_per_site > 0)
  int64_t channels = 0;        // process groups per data-parallel group for large all-reduces;
                               // 0 = from `topology` (1 without)
  double chunk_mb = 0;         // chunk size for the channels, MiB; 0 = auto: a tensor is cut into one
                               // chunk per concurrent collective (2 per channel), each at least
                               // min_chunk_bytes
  std::string topology;        // topology file of `slm probe` (optional), or "probe": `slm train`
                               // probes the links at start (run_dir/topology.json); picks channels
                               // and the smallest chunk
  WideLink link;               // the slow link, once known (resolve_wan, or the probe at start)
};

// UserError (one line) for bad values.
void validate(const WanOptions& o);
// The slowest link class (largest α) of a topology file of `slm probe`. UserError for an unreadable
// file.
WideLink wide_link(const std::string& topology);
// `link` filled from `topology` (a file) unless already known, and channels = 0 resolved: enough
// connections to keep the slow link's bandwidth-delay product in flight at ~2 MiB per connection
// (Gloo's pipelining), 1..8; 1 when the link is unknown.
WanOptions resolve_wan(WanOptions o);
// Smallest auto chunk for a ring all-reduce over `ranks` ranks: ranks x min(α·β, 1 MiB). A chunk
// pays 2(P-1) one-way delays however small it is, and moves at about min(β, 1 MiB per α) per
// connection (Gloo's window), so below P·min(αβ, 1 MiB) latency dominates its transfer time.
// Measured at 50 ms one-way, 4 ranks, 4 channels: 1 MiB chunks 2.6 s for 25 MiB, 4 MiB 0.83 s.
// Without a topology α·β is taken as 1 MiB (the long-path case).
int64_t min_chunk_bytes(const WideLink& w, int ranks);
// Collective over g's members: adds the channel groups and, with ranks_per_site, the local and
// cross-site groups to g (a no-op when nothing applies, e.g. every member in one site).
void make_wan_group(World& w, Group& g, const WanOptions& o);
// The members of g in this rank's site: g's local group when g has a hierarchical all-reduce,
// else g itself (hybrid ZeRO shards inside it: parallel/data_parallel.h).
Group site_group(const Group& g);
// One line for the log, e.g. "hierarchical all-reduce (2 sites x 2 ranks), bf16 across sites";
// "" for a plain group.
std::string describe_wan(const Group& g);

}  // namespace slm::comm
