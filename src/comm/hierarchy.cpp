// comm/hierarchy.cpp: see hierarchy.h.
#include "comm/hierarchy.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "comm/collectives.h"
#include "comm/wan.h"
#include "comm/world.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::comm {

// Gloo keeps about 2 MiB of a collective in flight per connection (two 1 MiB pieces).
constexpr double kBytesInFlight = 2 << 20;

void validate(const WanOptions& o) {
  if (o.ranks_per_site < 0) throw UserError("dist: ranks_per_site must be >= 0 (0 = flat collectives)");
  if (o.compress && o.ranks_per_site == 0) throw UserError("dist: compress needs ranks_per_site > 0");
  if (o.channels < 0 || o.channels > 16) throw UserError("dist: channels must be 0..16 (0 = auto)");
  if (o.chunk_mb < 0) throw UserError("dist: chunk_mb must be >= 0 (0 = auto)");
}

WideLink wide_link(const std::string& topology) {
  WideLink w;
  nlohmann::json t;
  try {
    t = nlohmann::json::parse(read_file(topology));
  } catch (const std::exception& e) {
    throw UserError(fmt::format("dist.topology: {}: not a topology file of `slm probe` ({})", topology,
                                std::string(e.what()).substr(0, 80)));
  }
  const nlohmann::json classes = t.value("classes", nlohmann::json::object());
  for (const auto& [name, c] : classes.items())
    if (c.value("alpha_s", 0.0) >= w.alpha_s) w = {c.value("alpha_s", 0.0), c.value("beta_Bps", 0.0)};
  return w;
}

WanOptions resolve_wan(WanOptions o) {
  if (o.link.alpha_s == 0 && !o.topology.empty() && o.topology != "probe") o.link = wide_link(o.topology);
  if (o.channels > 0) return o;
  const double bdp = o.link.beta_Bps * 2 * o.link.alpha_s;  // bytes in flight to fill the slowest link
  o.channels = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(bdp / kBytesInFlight)), 1, 8);
  return o;
}

int64_t min_chunk_bytes(const WideLink& w, int ranks) {
  const double per_link = w.alpha_s > 0 && w.beta_Bps > 0 ? std::min(w.alpha_s * w.beta_Bps, kBytesInFlight / 2)
                                                          : kBytesInFlight / 2;
  return static_cast<int64_t>(ranks * per_link);
}

namespace {

// Extra connections of g's ranks for chunked all-reduces (collective over g's members).
std::shared_ptr<Wan> with_channels(World& w, const Group& g, const WanOptions& o) {
  auto wan = std::make_shared<Wan>();
  wan->chunk_bytes = mib_bytes(o.chunk_mb);
  wan->min_chunk_bytes = min_chunk_bytes(o.link, g.size);
  for (int64_t c = 1; c < o.channels; ++c)
    wan->channels.push_back(new_group(w, fmt::format("{}.ch{}", g.name, c), g.ranks, /*own_connections=*/true));
  return wan;
}

}  // namespace

void make_wan_group(World& w, Group& g, const WanOptions& o_in) {
  const WanOptions o = resolve_wan(o_in);
  if (g.size == 1 || (o.channels == 1 && o.ranks_per_site == 0)) return;
  if (o.ranks_per_site == 0) {
    g.wan = with_channels(w, g, o);
    return;
  }
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
  if (!even) {  // one site, or sites of different sizes: flat (with channels if any)
    if (o.channels > 1) g.wan = with_channels(w, g, o);
    return;
  }
  auto wan = std::make_shared<Wan>();
  wan->hierarchical = true, wan->compress = o.compress;
  wan->sites = static_cast<int>(used.size());
  const int me = g.ranks[static_cast<size_t>(g.rank)];
  for (auto& s : used) {
    auto it = std::find(s.begin(), s.end(), me);
    if (it == s.end()) continue;
    const size_t pos = static_cast<size_t>(it - s.begin());
    wan->local = new_group(w, g.name + ".site", s);
    std::vector<int> cross;
    for (auto& t : used) cross.push_back(t[pos]);
    wan->cross = new_group(w, g.name + ".cross", cross);
    if (o.channels > 1 && !o.compress) wan->cross.wan = with_channels(w, wan->cross, o);  // the slow hop
  }
  g.wan = wan;
}

Group site_group(const Group& g) { return g.wan && g.wan->hierarchical ? g.wan->local : g; }

std::string describe_wan(const Group& g) {
  if (!g.wan) return "";
  const Wan& w = *g.wan;
  const int channels = static_cast<int>((w.hierarchical && w.cross.wan ? w.cross.wan->channels.size()
                                                                         : w.channels.size()) + 1);
  std::string out = w.hierarchical ? fmt::format("hierarchical all-reduce ({} sites x {} ranks){}", w.sites,
                                                 w.local.size, w.compress ? ", bf16 across sites" : "")
                                   : "flat all-reduce";
  if (channels > 1) out += fmt::format(", {} channels", channels);
  return out;
}

namespace {

// Elements per chunk: chunk_mb, or (auto) the tensor cut into one chunk per concurrent slot (Gloo runs
// two collectives at once per process group): the fewest chunks, so the fewest latency-bound ring
// rounds, that keep every connection busy; but at least min_chunk_bytes (hierarchy.h).
int64_t chunk_elements(const Wan& wan, const at::Tensor& t) {
  if (wan.chunk_bytes > 0) return wan.chunk_bytes / t.element_size();
  const int64_t slots = 2 * (static_cast<int64_t>(wan.channels.size()) + 1);
  return std::max<int64_t>(wan.min_chunk_bytes / t.element_size(), (t.numel() + slots - 1) / slots);
}

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
    const int64_t chunk = std::max<int64_t>(1, chunk_elements(wan, t));
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
    if (parts.empty()) return Pending{};
    // Waiting on the first waits on the others: its completion step holds them, never the first
    // itself (a cycle that would keep every chunk's work and tensors alive for good).
    std::vector<Pending> rest(parts.begin() + 1, parts.end());
    return then(parts.front(), [rest]() mutable {
      for (auto& p : rest) p.wait();
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

}  // namespace slm::comm
