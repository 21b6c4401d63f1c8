// dist/hierarchy.cpp: see hierarchy.h.
#include "dist/hierarchy.h"

#include <torch/torch.h>

#include <fmt/format.h>

#include "dist/collectives.h"
#include "dist/wan.h"
#include "dist/world.h"
#include "util/error.h"

namespace slm::dist {

void validate(const WanOptions& o) {
  if (o.ranks_per_site < 0) throw UserError("dist: ranks_per_site must be >= 0 (0 = flat collectives)");
  if (o.compress && o.ranks_per_site == 0) throw UserError("dist: compress needs ranks_per_site > 0");
  if (o.channels < 1 || o.channels > 16) throw UserError("dist: channels must be 1..16");
  if (o.chunk_mb <= 0) throw UserError("dist: chunk_mb must be > 0");
}

void make_wan_group(World& w, Group& g, const WanOptions& o) {
  if (g.size == 1 || (o.channels == 1 && o.ranks_per_site == 0)) return;
  auto wan = std::make_shared<Wan>();
  wan->compress = o.compress;
  wan->chunk_bytes = static_cast<int64_t>(o.chunk_mb * 1024 * 1024);
  for (int64_t c = 1; c < o.channels; ++c)
    wan->channels.push_back(new_group(w, fmt::format("{}.ch{}", g.name, c), g.ranks, /*own_connections=*/true));
  if (o.ranks_per_site > 0) {
    // Members by site, in rank order; hierarchical only when every site has the same count.
    std::vector<std::vector<int>> sites;
    for (int r : g.ranks) {
      const size_t s = static_cast<size_t>(r / o.ranks_per_site);
      if (sites.size() <= s) sites.resize(s + 1);
      sites[s].push_back(r);
    }
    std::vector<std::vector<int>> used;
    for (auto& s : sites)
      if (!s.empty()) used.push_back(s);
    bool even = used.size() > 1;
    for (auto& s : used) even = even && s.size() == used[0].size();
    if (even) {
      const int me = g.ranks[static_cast<size_t>(g.rank)];
      for (auto& s : used) {
        auto it = std::find(s.begin(), s.end(), me);
        if (it == s.end()) continue;
        const size_t pos = static_cast<size_t>(it - s.begin());
        wan->local = new_group(w, g.name + ".site", s);
        std::vector<int> cross;
        for (auto& t : used) cross.push_back(t[pos]);
        wan->cross = new_group(w, g.name + ".cross", cross);
      }
      wan->hierarchical = true;
    }
  }
  g.wan = wan;
}

namespace {

// Sum over the cross-site group of a shard, optionally sent as bf16.
void cross_sum(at::Tensor shard, const Wan& wan) {
  if (!wan.compress) {
    all_reduce_sum_async(shard, wan.cross).wait();
    return;
  }
  const int S = wan.cross.size;
  // bf16 bits as bytes: Gloo moves bytes as they are (it would widen bf16 to fp32 first).
  at::Tensor bits = shard.to(at::kBFloat16).contiguous().view(at::kByte);
  at::Tensor all = at::empty({S * bits.numel()}, bits.options());
  all_gather_into(all, bits, wan.cross);
  at::Tensor parts = all.view(at::kBFloat16).to(at::kFloat).view({S, -1});
  shard.copy_(parts.sum(0));  // the same order on every rank: the same result everywhere
}

}  // namespace

// all_reduce_sum_async's path for a group with WAN options (collectives.cpp).
Pending wan_all_reduce(const at::Tensor& t_in, const Group& g) {
  const std::shared_ptr<const Wan> keep = g.wan;
  const Wan& wan = *keep;
  at::Tensor t = t_in;
  if (!wan.hierarchical) {  // chunks over the channels, all in flight at once
    const int64_t chunk = std::max<int64_t>(1, wan.chunk_bytes / t.element_size());
    at::Tensor flat = t.view({-1});
    std::vector<Pending> parts;
    Group plain = g;
    plain.wan = nullptr;
    for (int64_t i = 0, k = 0; i < flat.numel(); i += chunk, ++k) {
      const Group& ch = k % (static_cast<int64_t>(wan.channels.size()) + 1) == 0
                            ? plain
                            : wan.channels[static_cast<size_t>(k % (static_cast<int64_t>(wan.channels.size()) + 1) - 1)];
      parts.push_back(all_reduce_sum_async(flat.narrow(0, i, std::min(chunk, flat.numel() - i)), ch));
    }
    Pending first = parts.empty() ? Pending{} : parts.front();
    return then(first, [parts]() mutable {
      for (auto& p : parts) p.wait();
    });
  }
  // Hierarchical: local sum, cross-site sum of this rank's shard, local all-gather.
  const int L = wan.local.size, j = wan.local.rank;
  const int64_t n = t.numel(), piece = (n + L - 1) / L;
  return then(all_reduce_sum_async(t, wan.local), [t, keep, L, j, n, piece]() mutable {
    const Wan& wan = *keep;
    at::Tensor padded = at::zeros({piece * L}, t.options());
    padded.narrow(0, 0, n).copy_(t.view({-1}));
    at::Tensor shard = padded.narrow(0, j * piece, piece).clone();
    cross_sum(shard, wan);
    all_gather_into(padded, shard, wan.local);
    t.view({-1}).copy_(padded.narrow(0, 0, n));
  });
}

}  // namespace slm::dist
