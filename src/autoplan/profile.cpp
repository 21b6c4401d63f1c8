// autoplan/profile.cpp: see profile.h.
#include "autoplan/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "autoplan/comm_cpu.h"
#include "autoplan/cpu_quota.h"
#include "autoplan/profile_timing.h"
#include "autoplan/profile_tp2.h"
#include "comm/collectives.h"
#include "host/cpu_share.h"
#include "host/hardware.h"
#include "host/host_name.h"
#include "host/machine.h"
#include "host/memory_limit.h"
#include "host/rng_state.h"
#include "host/runtime.h"
#include "model/autocast.h"
#include "parallel/flat.h"
#include "planner/pool_cores.h"
#include "train/optim.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/measure_cache.h"

namespace slm::autoplan {
namespace {
constexpr double kSharedMinSampleS = 0.25;  // the shortest timing where ranks time-share cores

nlohmann::json to_json(const planner::RankProfile& r) {
  planner::ComputeProfile p;
  p.ranks = {r};
  return nlohmann::json::parse(planner::profile_to_json(p))["ranks"][0];
}

planner::RankProfile from_json(const nlohmann::json& j) {
  nlohmann::json whole = {{"shape", {{"n_embd", 1}, {"n_head", 1}, {"vocab_padded", 1}, {"seq_len", 1}, {"precision", "x"}}},
                          {"ranks", {j}}};
  return planner::parse_profile(whole.dump(), "profile cache").ranks.at(0);
}

// Adds `mine` under `key` to the measurement cache (other ranks of this machine add theirs).
void store_in_cache(const std::string& key, const planner::RankProfile& mine) {
  nlohmann::json j = to_json(mine);
  j["solo_speedup"] = mine.solo_speedup;
  store_measurement("profile.json", key, j);
}

// One part's timing within a round, taken in slices of min_s / kSlices (time_split's) until they
// span min_s; the slices' means.
constexpr int kSlices = 4;
struct Slices {
  double a = 0, b = 0, span = 0;
  int n = 0;
  template <class F, class G>
  bool next(const std::string& device, double min_s, F&& first, G&& second) {  // false: done
    if (n > 0 && span >= min_s) return false;
    const auto [ta, tb] = time_split(device, min_s / kSlices, first, second);
    a += ta, b += tb, span += std::max(min_s / kSlices, ta + tb), ++n;
    return true;
  }
  double first() const { return a / n; }
  double second() const { return b / n; }
};

// A block's forward and backward, the embedding and the head (+ loss) forward and backward of m
// (one block) at each micro-batch size into out. Every rank of g times each round of sizes at once
// (a barrier before each): "all busy" must mean all busy, or a rank that starts while the others
// still load times its blocks alone. The sizes in turn, `repeats` rounds of all of them, the
// median of each size's rounds: a VM's speed moves minute to minute, and timed one size after
// another a quick minute went to one size (the planner study of 2026-11-27d: a block at b = 4 at
// 4.9 ms per sequence where b = 2 took 7.0 and b = 8 4.9, its head likewise), and the search chose
// micro-batches of 4 for it (predicted 1.03 s, measured 1.29). Within a round every part of every
// size is timed in slices (a quarter of min_s) in turn until each spans min_s, so that the machine's
// speed moving within a round falls on every size alike: over 10 profiles each of the 4-rank
// testbed, the per-sequence time of a block at 4 against 2 scattered with sd 0.07 where timed part
// after part it had 0.13 (0.62-1.15), the head's at 1 against 2 0.17 where 0.30.
void time_parts(const ProfileRequest& r, const comm::Group& g, model::GPT2& m, planner::RankProfile& out) {
  const model::GPT2Config& c = m.cfg;
  const int64_t T = r.seq_len, C = c.n_embd;
  auto opts = torch::TensorOptions().device(r.device);
  struct AtSize {
    at::Tensor x, idx, out_grad, y, loss;
    std::vector<double> block_f, block_b, embed, head_f, head_b;
  };
  std::vector<AtSize> at(r.micro_batch.size());
  for (size_t k = 0; k < at.size(); ++k) {
    const int64_t b = r.micro_batch[k];
    at[k].x = torch::randn({b, T, C}, opts).requires_grad_(true);
    at[k].idx = torch::randint(c.vocab_size, {b, T}, opts.dtype(torch::kLong));
    at[k].out_grad = torch::randn({b, T, C}, opts);
  }
  model::AutocastGuard autocast(r.precision, r.device);
  for (int round = -1; round < r.repeats; ++round) {  // round -1: the warm-up
    comm::barrier(g);
    const double min_s = round < 0 ? 0 : r.min_sample_s;
    std::vector<Slices> block(at.size()), embed(at.size()), head(at.size());
    for (bool more = true; more;) {  // every part of every size a slice in turn
      more = false;
      for (size_t k = 0; k < at.size(); ++k) {
        AtSize& s = at[k];
        more |= block[k].next(r.device, min_s, [&] { s.y = model::block_forward(m.h[0], s.x, c, true); },
                              [&] { s.y.backward(s.out_grad); });
        more |= embed[k].next(r.device, min_s, [&] { model::embed(m, s.idx, true).sum().backward(); }, [] {});
        more |= head[k].next(r.device, min_s, [&] { s.loss = model::head_loss(m, s.x, s.idx); }, [&] { s.loss.backward(); });
      }
    }
    if (round < 0) continue;
    for (size_t k = 0; k < at.size(); ++k) {
      AtSize& s = at[k];
      s.block_f.push_back(block[k].first()), s.block_b.push_back(block[k].second()), s.embed.push_back(embed[k].first());
      s.head_f.push_back(head[k].first()), s.head_b.push_back(head[k].second());
    }
  }
  for (const AtSize& s : at) {
    out.block_fwd_s.push_back(median_of(s.block_f)), out.block_bwd_s.push_back(std::max(median_of(s.block_b), 1e-6));
    out.embed_s.push_back(median_of(s.embed));
    out.head_fwd_s.push_back(median_of(s.head_f)), out.head_bwd_s.push_back(std::max(median_of(s.head_b), 1e-6));
  }
}

// Blocks in a row (up to kRowBlocks) against one alone (out's block times at size k): weights
// that no longer stay in cache and per-block overheads make a model slower than its blocks timed
// one by one; on a GPU, launches that overlap the previous block's kernels make it faster at
// small sizes, not at large ones.
double row_scale(const ProfileRequest& r, const planner::RankProfile& out, size_t k) {
  const int64_t layers = std::min<int64_t>(r.model.n_layer, kRowBlocks);
  model::GPT2 many = model_on_device(r, layers, 2);
  const int64_t b = r.micro_batch[k];
  auto opts = torch::TensorOptions().device(r.device);
  model::AutocastGuard autocast(r.precision, r.device);
  at::Tensor x = torch::randn({b, r.seq_len, r.model.n_embd}, opts).requires_grad_(true);
  at::Tensor g = torch::randn({b, r.seq_len, r.model.n_embd}, opts);
  const double t = median_time(std::max(1, r.repeats - 1), r.device, r.min_sample_s, [&] {
    model::run_blocks(many, x, 0, many.h.size(), true).backward(g);
  });
  const double one = out.block_fwd_s[k] + out.block_bwd_s[k];
  return std::clamp(t / (static_cast<double>(layers) * one), 0.5, 3.0);
}

// row_scale at the second size on CPUs (quick), at the largest on GPUs, where plans run at large
// sizes (gpt2 on an H200: x0.80 at micro-batch 2 predicted 1 x 64 13% fast); the second size there
// too when the largest does not fit.
double block_scale(const ProfileRequest& r, const planner::RankProfile& out) {
  const size_t second = std::min<size_t>(1, r.micro_batch.size() - 1);
  if (r.device == "cpu") return row_scale(r, out, second);
  try {
    return row_scale(r, out, r.micro_batch.size() - 1);
  } catch (const c10::Error&) {  // out of memory
    return row_scale(r, out, second);
  }
}

// AdamW over m's parameters (the optimizer is memory-bound: its time per parameter).
double optim_s_per_param(const ProfileRequest& r, model::GPT2& m) {
  auto named = model::named_parameters(m);
  parallel::FlatLayout layout = parallel::make_layout(named, 1);
  auto opts = torch::TensorOptions().device(r.device);
  at::Tensor flat = torch::randn({layout.numel}, opts), grad = torch::randn({layout.numel}, opts);
  train::AdamW adam = train::make_adamw(layout, {parallel::Segment{0, 0, layout.numel}}, flat);
  train::OptimConfig oc;
  const double t = median_time(r.repeats, r.device, r.min_sample_s, [&] { train::adamw_step(adam, flat, grad, oc, 1e-4); });
  return t / static_cast<double>(layout.numel);
}

// This rank's profile, timed with every rank of g busy.
planner::RankProfile measure(const ProfileRequest& r, const comm::Group& g) {
  planner::RankProfile out;
  out.overhead_bytes = static_cast<double>(host::resident_memory_bytes());  // the runtime's own share
  model::GPT2 m = model_on_device(r, 1, 1);
  time_parts(r, g, m, out);
  out.block_scale = block_scale(r, out);
  out.optim_s_per_param = optim_s_per_param(r, m);
  out.micro_batch = r.micro_batch;
  return out;
}

}  // namespace

planner::ProfileShape profile_shape(const model::GPT2Config& m, int64_t seq_len, const std::string& precision) {
  return {m.n_embd, m.n_head, m.padded_vocab(), seq_len, precision};
}

namespace {

// Every rank's profile on every rank (fixed-width doubles summed over g: the device name and the
// runtime settings as kText characters each, then the numbers).
std::vector<planner::RankProfile> gather_profile(const planner::RankProfile& mine, const comm::Group& g) {
  constexpr size_t kText = 128, kName = 2 * kText;
  const size_t n = mine.micro_batch.size(), width = kName + 10 * n + 7;
  std::vector<double> all(width * static_cast<size_t>(g.size), 0.0);
  double* me = all.data() + width * static_cast<size_t>(g.rank);
  auto put = [](const std::string& text, double* to) {
    for (size_t i = 0; i < kText && i < text.size(); ++i) to[i] = static_cast<unsigned char>(text[i]);
  };
  auto get = [](const double* from) {
    std::string text;
    for (size_t i = 0; i < kText && from[i] != 0; ++i) text += static_cast<char>(from[i]);
    return text;
  };
  put(mine.device, me), put(mine.runtime, me + kText);
  for (size_t k = 0; k < n; ++k) {
    me[kName + k] = mine.block_fwd_s[k], me[kName + n + k] = mine.block_bwd_s[k], me[kName + 2 * n + k] = mine.embed_s[k];
    me[kName + 3 * n + k] = mine.head_fwd_s[k], me[kName + 4 * n + k] = mine.head_bwd_s[k];
  }
  me[kName + 5 * n] = mine.optim_s_per_param, me[kName + 5 * n + 1] = mine.overhead_bytes;
  me[kName + 5 * n + 2] = mine.solo_speedup, me[kName + 5 * n + 3] = mine.block_scale;
  me[kName + 5 * n + 4] = mine.comm_cpu_s_per_byte, me[kName + 5 * n + 5] = mine.alone_cores;
  me[kName + 5 * n + 6] = mine.machine_extra_cpu_s_per_byte;
  double* tp2 = me + kName + 5 * n + 7;  // zeros: not measured
  for (size_t k = 0; k < mine.tp2_fwd_s.size(); ++k) tp2[k] = mine.tp2_fwd_s[k], tp2[n + k] = mine.tp2_bwd_s[k];
  for (size_t k = 0; k < mine.tp2_alone_s.size(); ++k) tp2[2 * n + k] = mine.tp2_alone_s[k];
  for (size_t k = 0; k < mine.tp2_pipe_fwd_s.size(); ++k) tp2[3 * n + k] = mine.tp2_pipe_fwd_s[k], tp2[4 * n + k] = mine.tp2_pipe_bwd_s[k];
  all = comm::sum(all, g);
  std::vector<planner::RankProfile> out;
  for (int r = 0; r < g.size; ++r) {
    const double* v = all.data() + width * static_cast<size_t>(r);
    planner::RankProfile p;
    p.device = get(v), p.runtime = get(v + kText);
    p.micro_batch = mine.micro_batch;
    for (size_t k = 0; k < n; ++k) {
      p.block_fwd_s.push_back(v[kName + k]), p.block_bwd_s.push_back(v[kName + n + k]);
      p.embed_s.push_back(v[kName + 2 * n + k]), p.head_fwd_s.push_back(v[kName + 3 * n + k]);
      p.head_bwd_s.push_back(v[kName + 4 * n + k]);
    }
    p.optim_s_per_param = v[kName + 5 * n], p.overhead_bytes = v[kName + 5 * n + 1];
    p.solo_speedup = v[kName + 5 * n + 2], p.block_scale = v[kName + 5 * n + 3];
    p.comm_cpu_s_per_byte = v[kName + 5 * n + 4], p.alone_cores = v[kName + 5 * n + 5];
    p.machine_extra_cpu_s_per_byte = v[kName + 5 * n + 6];
    const double* tp2 = v + kName + 5 * n + 7;
    for (size_t k = 0; k < n && tp2[0] > 0; ++k) p.tp2_fwd_s.push_back(tp2[k]), p.tp2_bwd_s.push_back(tp2[n + k]);
    for (size_t k = 0; k < n && tp2[2 * n] > 0; ++k) p.tp2_alone_s.push_back(tp2[2 * n + k]);
    for (size_t k = 0; k < n && tp2[3 * n] > 0; ++k) p.tp2_pipe_fwd_s.push_back(tp2[3 * n + k]), p.tp2_pipe_bwd_s.push_back(tp2[4 * n + k]);
    p.source = mine.source;
    out.push_back(p);
  }
  return out;
}


// Block forward + backward at the largest size, alone (the others wait at a barrier).
double solo_block_s(const ProfileRequest& r) {
  model::GPT2 m = model_on_device(r, 1, 1);
  const model::GPT2Config& c = m.cfg;
  const int64_t b = r.micro_batch.back();
  auto opts = torch::TensorOptions().device(r.device);
  model::AutocastGuard autocast(r.precision, r.device);
  at::Tensor x = torch::randn({b, r.seq_len, c.n_embd}, opts).requires_grad_(true);
  at::Tensor g = torch::randn({b, r.seq_len, c.n_embd}, opts);
  return median_time(r.repeats, r.device, r.min_sample_s, [&] { model::block_forward(m.h[0], x, c, true).backward(g); });
}

}  // namespace

namespace {

// Which ranks share a pool of cores: the machine (host name) and the cgroup a testbed site's ranks
// run in (SLM_CGROUP), hashed, of every rank. host[q]: rank q's pool (in order of first rank);
// index_in_host[q]: its place among the pool's ranks; ranks_on[h]: the pool's ranks.
struct RankPools {
  std::vector<int> host, index_in_host;
  std::vector<int> machine;  // per rank: its machine (host name), numbered in order of first rank
  std::map<int, int> ranks_on;
  int most() const {
    int n = 0;
    for (const auto& [h, k] : ranks_on) n = std::max(n, k);
    return n;
  }
};
RankPools rank_pools(const comm::Group& g) {
  const char* cg = std::getenv("SLM_CGROUP");
  std::vector<double> hashes_of(static_cast<size_t>(g.size), 0.0), machines_of(static_cast<size_t>(g.size), 0.0);
  const std::string host = host::host_name();
  hashes_of[static_cast<size_t>(g.rank)] = hash_number(host + "|" + (cg ? cg : ""));
  machines_of[static_cast<size_t>(g.rank)] = hash_number(host);
  hashes_of = comm::sum(hashes_of, g), machines_of = comm::sum(machines_of, g);
  RankPools p;
  p.host.resize(static_cast<size_t>(g.size)), p.index_in_host.resize(static_cast<size_t>(g.size));
  for (int q = 0; q < g.size; ++q)
    p.machine.push_back(static_cast<int>(std::find(machines_of.begin(), machines_of.end(), machines_of[static_cast<size_t>(q)]) -
                                         machines_of.begin()));
  std::vector<double> pools;
  for (int q = 0; q < g.size; ++q) {
    auto it = std::find(pools.begin(), pools.end(), hashes_of[static_cast<size_t>(q)]);
    if (it == pools.end()) it = pools.insert(pools.end(), hashes_of[static_cast<size_t>(q)]);
    p.host[static_cast<size_t>(q)] = static_cast<int>(it - pools.begin());
    p.index_in_host[static_cast<size_t>(q)] = p.ranks_on[p.host[static_cast<size_t>(q)]]++;
  }
  return p;
}

// The solo speed-ups as the planner will read them: every rank's, the machine's pools held to its
// cores (planner/pool_cores.h, from what every rank sees of its CPUs; rank 0 says so where that
// changed them) and settled (planner::settle_shared_pools), so that the tp pairs are timed alone
// exactly where the cost model uses those timings. Collective over g.
std::vector<planner::RankProfile> settled_speedups(const planner::RankProfile& mine, const RankPools& pools,
                                                   const std::string& device, const comm::Group& g) {
  const host::CpuCount cpus = host::cpu_count();
  const auto [quota, period] = cpu_quota_s();
  constexpr size_t kEach = 6;
  const std::vector<double> all = comm::gather({mine.solo_speedup, mine.alone_cores, static_cast<double>(cpus.logical),
                                                static_cast<double>(cpus.physical),
                                                device == "cpu" ? static_cast<double>(host::cpu_threads()) : 0.0,
                                                period > 0 ? quota / period : 0.0},
                                               g);
  std::vector<planner::RankProfile> ranks(static_cast<size_t>(g.size));
  std::vector<planner::CpuFacts> facts;
  for (size_t q = 0; q < ranks.size(); ++q) {
    const double* v = all.data() + kEach * q;
    ranks[q].host = pools.host[q], ranks[q].host_ranks = pools.ranks_on.at(pools.host[q]), ranks[q].machine = pools.machine[q];
    ranks[q].solo_speedup = v[0], ranks[q].alone_cores = v[1];
    facts.push_back({static_cast<int>(v[2]), static_cast<int>(v[3]), static_cast<int>(v[4]), v[5]});
  }
  for (const std::string& line : planner::fit_pool_cores(ranks, facts))
    if (g.rank == 0) std::fprintf(stderr, "profile: %s\n", line.c_str());
  planner::settle_shared_pools(ranks);
  return ranks;
}

// This rank's entry in the cache, if it has one.
std::optional<planner::RankProfile> from_cache(const std::string& key) {
  const auto c = cached_measurement("profile.json", key);
  if (!c) return std::nullopt;
  try {
    planner::RankProfile mine = from_json(*c);
    mine.solo_speedup = c->value("solo_speedup", 1.0);
    mine.source = "cached";
    return mine;
  } catch (...) {
    return std::nullopt;
  }
}

// The share of their threads' time this machine's ranks had from a to b (host::ranks_share), the
// same number on each of them: the machine's first rank's clock, the CPU time of all. Collective.
double machine_share(const host::CpuClock& a, const host::CpuClock& b, const RankPools& pools, const comm::Group& g) {
  constexpr size_t kEach = 4;
  const std::vector<double> all = comm::gather({b.wall_s - a.wall_s, b.idle_s - a.idle_s, b.process_s - a.process_s,
                                                static_cast<double>(host::cpu_threads())},
                                               g);
  const int machine = pools.machine[static_cast<size_t>(g.rank)];
  const double* first = nullptr;
  double cpu_s = 0, threads = 0;
  for (size_t q = 0; q < pools.machine.size(); ++q) {
    if (pools.machine[q] != machine) continue;
    const double* v = all.data() + kEach * q;
    if (!first) first = v;
    cpu_s += v[2], threads += v[3];
  }
  return host::ranks_share({}, {first[0], 0, first[1]}, cpu_s, static_cast<int>(threads), host::cpu_count().logical);
}

// Every rank measures (collective): its compute with all busy, then, where ranks share a pool, one
// rank per pool at a time alone (solo_speedup, the pools then held to the machine's cores); the
// CPU cost of communication, the tp-2 pairs; the ranks of a machine add their entries to the cache
// in turn (one file), unless the machine was busy with other work while they timed with all busy
// (then the profile is used and not kept; the check spans those timings alone: the later steps
// move bytes, and on the testbed its link emulator's CPU would count as other work).
planner::RankProfile measure_rank(const ProfileRequest& r, comm::World& w, const RankPools& pools,
                                  const std::string& key, const std::string& device) {
  const comm::Group& g = w.world;
  const bool shares = pools.ranks_on.at(pools.host[static_cast<size_t>(g.rank)]) > 1;
  const int mine_in_host = pools.index_in_host[static_cast<size_t>(g.rank)];
  comm::barrier(g);
  const host::CpuClock before = host::cpu_clock();
  planner::RankProfile mine = measure(r, g);
  comm::barrier(g);
  const double share = machine_share(before, host::cpu_clock(), pools, g);
  const bool keep = share >= host::kAloneCpuShare;
  mine.device = device;
  mine.runtime = host::runtime_settings();
  mine.source = keep ? "measured" : "measured" + host::busy_note(share) + ": not cached";
  mine.solo_speedup = 1;
  for (int k = 0; k < pools.most(); ++k) {
    comm::barrier(g);
    if (shares && mine_in_host == k) {
      const size_t last = mine.micro_batch.size() - 1;
      mine.solo_speedup = std::max(1.0, (mine.block_fwd_s[last] + mine.block_bwd_s[last]) / solo_block_s(r));
    }
  }
  mine.alone_cores = alone_cores();
  const std::vector<planner::RankProfile> settled = settled_speedups(mine, pools, r.device, g);
  mine.solo_speedup = settled[static_cast<size_t>(g.rank)].solo_speedup;
  const bool alone_too = std::any_of(settled.begin(), settled.end(), [](const planner::RankProfile& p) { return p.shares_cores; });
  comm::barrier(g);
  const CommCpuPerByte comm_cpu = comm_cpu_per_byte(g, pools.machine);
  mine.comm_cpu_s_per_byte = comm_cpu.own, mine.machine_extra_cpu_s_per_byte = comm_cpu.machine_extra;
  measure_tp2(r, w, pools.host, pools.index_in_host, alone_too, &mine);
  for (int k = 0; k < pools.most(); ++k) {
    comm::barrier(g);
    if (mine_in_host == k && keep) store_in_cache(key, mine);
  }
  return mine;
}

// A UserError (one line) where what the profile times cannot fit in this machine's memory beside
// its other ranks' (on CPUs; all time at once): a block and the head at the largest size, blocks
// in a row at the second (row_scale). Else the kernel kills a rank before anything says why.
void check_profile_fits(const ProfileRequest& r) {
  if (r.device != "cpu") return;
  const host::MemoryLimit limit = host::memory_limit();
  const int64_t second = r.micro_batch[std::min<size_t>(1, r.micro_batch.size() - 1)];
  const double one = train::blocks_bytes(r.model, 1, r.micro_batch.back(), r.seq_len, r.precision);
  const double row = train::blocks_bytes(r.model, std::min<int64_t>(r.model.n_layer, kRowBlocks), second, r.seq_len, r.precision);
  const double need = std::max(one, row) * std::max(1, r.local_ranks);
  if (limit.bytes > 0 && need > limit.bytes)
    throw UserError(fmt::format("profile: timing micro-batches up to {} x {} tokens needs ~{:.1f} GiB on {} rank(s), "
                                "more than {} ({:.1f} GiB); time smaller micro-batches (slm profile --micro-batches, "
                                "batch.micro_batch), a shorter sequence or a smaller model",
                                r.micro_batch.back(), r.seq_len, need / (1 << 30), std::max(1, r.local_ranks), limit.from,
                                limit.bytes / (1 << 30)));
}

}  // namespace

std::vector<planner::RankProfile> profile_job(const ProfileRequest& request, comm::World& w) {
  const comm::Group& g = w.world;
  check_profile_fits(request);
  const host::KeepRng keep{c10::Device(request.device)};  // its random inputs leave the run's generators as they were
  ProfileRequest r = request;
  if (r.min_sample_s <= 0) r.min_sample_s = 2 * quota_period_s();
  RankPools pools = rank_pools(g);
  const int my_host = pools.host[static_cast<size_t>(g.rank)];
  // Ranks time-sharing cores get them in scheduler slices of a few ms: a timing shorter than
  // several slices is luck (the planner study's 4 ranks on 2 cores timed one block at b = 1 as
  // 3 ms on one rank and 11 ms on another, and the planner gave the "fast" rank 11 of 24 layers).
  if (pools.ranks_on[my_host] > 1) r.min_sample_s = std::max(r.min_sample_s, kSharedMinSampleS);
  // The cache, unless any rank misses (then every rank measures: the solo rounds are collective).
  // Per rank of the pool: ranks of one machine share the cache file, and what each measured
  // differs by where it sits (the communication CPU per byte of a rank whose ring neighbour is in
  // another site was 3x its neighbour's on the testbed): one key for all made every rank the last
  // writer's copy in the next job. v10: entries from before the busy-machine check are not read.
  const planner::ProfileShape s = profile_shape(r.model, r.seq_len, r.precision);
  const host::DeviceInfo dev = host::describe_device(r.device, r.precision, host::cpu_threads(), 0, 0);
  const std::string key = fmt::format("v10 | {} | {} | rank {} of {} here | cpu {} | C {} H {} Vp {} T {} {} | b {}", dev.name,
                                      host::measurement_context(), pools.index_in_host[static_cast<size_t>(g.rank)],
                                      pools.ranks_on[my_host], cpu_quota(), s.n_embd, s.n_head, s.vocab_padded,
                                      s.seq_len, s.precision, fmt::join(r.micro_batch, ","));
  const std::optional<planner::RankProfile> cached = r.use_cache ? from_cache(key) : std::nullopt;
  planner::RankProfile mine = cached ? *cached : planner::RankProfile{};
  if (comm::max(cached ? 0.0 : 1.0, g) > 0) mine = measure_rank(r, w, pools, key, dev.name);
  mine.alone_cores = alone_cores();  // not measured: the quota as it is now
  std::vector<planner::RankProfile> all = gather_profile(mine, g);
  for (int q = 0; q < g.size; ++q) {
    planner::RankProfile& p = all[static_cast<size_t>(q)];
    p.host = pools.host[static_cast<size_t>(q)];
    p.host_ranks = pools.ranks_on[p.host];
    p.machine = pools.machine[static_cast<size_t>(q)];
  }
  planner::settle_shared_pools(all);  // alone its ranks run notably faster (on average)
  return all;
}

}  // namespace slm::autoplan
