// autoplan/profile.cpp: see profile.h.
#include "autoplan/profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "comm/collectives.h"
#include "host/hardware.h"
#include "host/machine.h"
#include "host/runtime.h"
#include "model/autocast.h"
#include "parallel/flat.h"
#include "parallel/tensor/layers.h"
#include "planner/pool_cores.h"
#include "train/optim.h"
#include "util/measure_cache.h"

namespace slm::autoplan {
namespace {
using Clock = std::chrono::steady_clock;
constexpr double kSharedMinSampleS = 0.25;  // the shortest timing where ranks time-share cores
constexpr double kTp2MinSampleS = 0.1;      // and of a tp pair anywhere: timed one run at a time,
                                            // 2 ranks with 2 cores of their own gave 19-27 ms per
                                            // block at b = 2 in three profiles

void sync(const std::string& device) {
  if (device != "cpu") torch::cuda::synchronize();
}

// One timing of first() then second(), each phase's mean over as many runs as span min_s (a
// forward and its backward see the same contention: timed apart, their difference was noise on
// shared cores).
template <class F, class G>
std::pair<double, double> time_split(const std::string& device, double min_s, F&& first, G&& second) {
  double ta = 0, tb = 0;
  int runs = 0;
  do {
    sync(device);
    const auto t0 = Clock::now();
    first();
    sync(device);
    const auto t1 = Clock::now();
    second();
    sync(device);
    ta += std::chrono::duration<double>(t1 - t0).count();
    tb += std::chrono::duration<double>(Clock::now() - t1).count();
    ++runs;
  } while (ta + tb < min_s);
  return {ta / runs, tb / runs};
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median of `repeats` timings of f (time_split's first phase, with nothing after it) after one
// warm-up.
template <class F>
double median_time(int repeats, const std::string& device, double min_s, F&& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) t.push_back(time_split(device, min_s, f, [] {}).first);
  return median_of(t);
}

// The cgroup folders whose CPU quota applies to this process: a testbed site's ranks share one
// (testbed/cgroup.h, which also names it in SLM_CGROUP: inside a cgroup namespace
// /proc/self/cgroup may say "/"), then those /proc/self/cgroup names (v2, v1).
std::vector<std::string> cgroup_dirs() {
  std::vector<std::string> dirs;
  if (const char* dir = std::getenv("SLM_CGROUP")) dirs.push_back(dir);
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string path = line.substr(colon + 1);
    for (const std::string& d : {"/sys/fs/cgroup" + path, "/sys/fs/cgroup/cpu" + path, "/sys/fs/cgroup/cpu,cpuacct" + path})
      dirs.push_back(d);
  }
  return dirs;
}

std::string first_line(const std::string& file) {
  std::ifstream q(file);
  std::string v;
  return q && std::getline(q, v) ? v : "";
}

// This process's CPU quotas, as one string (part of the cache key).
std::string cpu_quota() {
  std::string out = std::getenv("SLM_CPU_MAX") ? std::string("testbed=") + std::getenv("SLM_CPU_MAX") + ";" : "";
  for (const std::string& d : cgroup_dirs())
    for (const std::string& f : {d + "/cpu.max", d + "/cpu.cfs_quota_us"})
      if (const std::string v = first_line(f); !v.empty()) out += f + "=" + v + ";";
  return out;
}

// The CPU quota that limits this process, as {quota, period} in seconds ({0, 0} without one):
// the testbed's (SLM_CPU_MAX, testbed/cgroup.h), else the first cgroup's (v2 cpu.max, v1 cfs).
std::pair<double, double> cpu_quota_s() {
  auto cpu_max = [](const std::string& line) -> std::pair<double, double> {  // "QUOTA PERIOD" in µs, or "max ..."
    std::istringstream v(line);
    std::string quota;
    double period = 0;
    if (v >> quota >> period && quota != "max" && quota[0] != '-' && period > 0)
      return {std::strtod(quota.c_str(), nullptr) / 1e6, period / 1e6};
    return {0, 0};
  };
  if (const char* testbed = std::getenv("SLM_CPU_MAX"))
    if (const auto q = cpu_max(testbed); q.second > 0) return q;
  for (const std::string& d : cgroup_dirs()) {
    if (const auto q = cpu_max(first_line(d + "/cpu.max")); q.second > 0) return q;
    std::istringstream v1(first_line(d + "/cpu.cfs_quota_us") + " " + first_line(d + "/cpu.cfs_period_us"));
    double q1 = 0, p1 = 0;
    if (v1 >> q1 >> p1 && q1 > 0 && p1 > 0) return {q1 / 1e6, p1 / 1e6};
  }
  return {0, 0};
}

// The period of that quota (0 without one): within a period a quota-limited rank runs at full
// speed until its quota is spent, then not at all, so a timing shorter than a period can miss the
// limit altogether (the testbed's 0.5-core site timed its blocks at b = 1 only 2x slower than the
// free site, where whole steps ran ~4x slower).
double quota_period_s() { return cpu_quota_s().second; }

// The cores one rank has when it runs alone: 1, or the quota where it allows less (a testbed site
// of cpus = 0.5). The solo speed-up is relative to this, so a pool's cores are ranks / speed-up x it.
double alone_cores() {
  const auto [quota, period] = cpu_quota_s();
  return quota > 0 && period > 0 ? std::min(1.0, quota / period) : 1.0;
}

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

// A model of `layers` blocks of the request's shape on its device (no dropout).
model::GPT2 model_on_device(const ProfileRequest& r, int64_t layers, uint64_t seed) {
  model::GPT2Config c = r.model;
  c.n_layer = layers, c.dropout = 0;
  model::GPT2 m = model::init_gpt2(c, seed);
  if (r.device != "cpu")
    for (auto& [name, p] : model::named_parameters(m)) p.set_data(p.data().to(r.device));
  return m;
}

// A block's forward and backward, the embedding and the head (+ loss) forward and backward of m
// (one block) at each micro-batch size into out. Every rank of g times each round of sizes at once
// (a barrier before each): "all busy" must mean all busy, or a rank that starts while the others
// still load times its blocks alone. The sizes in turn, `repeats` rounds of all of them, the
// median of each size's rounds: a VM's speed moves minute to minute, and timed one size after
// another a quick minute went to one size (the planner study of 2026-11-27d: a block at b = 4 at
// 4.9 ms per sequence where b = 2 took 7.0 and b = 8 4.9, its head likewise), and the search chose
// micro-batches of 4 for it (predicted 1.03 s, measured 1.29).
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
    for (AtSize& s : at) {
      const double min_s = round < 0 ? 0 : r.min_sample_s;
      const auto block = time_split(r.device, min_s, [&] { s.y = model::block_forward(m.h[0], s.x, c, true); },
                                    [&] { s.y.backward(s.out_grad); });
      const double embed = time_split(r.device, min_s, [&] { model::embed(m, s.idx, true).sum().backward(); }, [] {}).first;
      const auto head = time_split(r.device, min_s, [&] { s.loss = model::head_loss(m, s.x, s.idx); }, [&] { s.loss.backward(); });
      if (round < 0) continue;
      s.block_f.push_back(block.first), s.block_b.push_back(block.second), s.embed.push_back(embed);
      s.head_f.push_back(head.first), s.head_b.push_back(head.second);
    }
  }
  for (const AtSize& s : at) {
    out.block_fwd_s.push_back(median_of(s.block_f)), out.block_bwd_s.push_back(std::max(median_of(s.block_b), 1e-6));
    out.embed_s.push_back(median_of(s.embed));
    out.head_fwd_s.push_back(median_of(s.head_f)), out.head_bwd_s.push_back(std::max(median_of(s.head_b), 1e-6));
  }
}

// Blocks in a row (up to 8) against one alone (out's block times at size k): weights that no
// longer stay in cache and per-block overheads make a model slower than its blocks timed one by
// one; on a GPU, launches that overlap the previous block's kernels make it faster at small sizes,
// not at large ones.
double row_scale(const ProfileRequest& r, const planner::RankProfile& out, size_t k) {
  const int64_t layers = std::min<int64_t>(r.model.n_layer, 8);
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


// Busy CPU seconds of the whole machine so far (/proc/stat: every process, the kernel's
// interrupts and softirqs; on a testbed the link emulator too), or -1 where it cannot be read.
double machine_busy_s() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu") return -1;
  return (user + nice + system + irq + softirq) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// This machine's host name.
std::string host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// A string as a number every rank can compare (exact in a double).
double hash_of(const std::string& text) { return static_cast<double>(std::hash<std::string>{}(text) % (1ull << 50)); }

// Per byte this process sends or receives in an all-reduce of every rank of g: its own CPU time
// (Gloo's threads and the kernel's socket copies: getrusage counts both; waiting costs none), and
// its share of what its machine spent beyond its ranks' own over the same time (the machine's busy
// CPU less theirs, split evenly between them; 0 where /proc/stat cannot be read): the kernel's
// forwarding and, on a testbed, the link emulator's copies of every packet that crosses sites,
// which no rank is charged for. machine[q]: rank q's machine.
struct CommCpuPerByte {
  double own = 0, machine_extra = 0;
};
CommCpuPerByte comm_cpu_per_byte(const comm::Group& g, const std::vector<int>& machine) {
  if (g.size < 2) return {};
  const int64_t n = 1 << 20;  // 4 MB of fp32
  at::Tensor t = torch::ones({n});
  comm::all_reduce_sum(t, g);  // connections warm
  auto cpu_s = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  const int reps = 6;  // /proc/stat counts in ticks (10 ms): a window of several tenths of a second
  comm::barrier(g);
  const double before = cpu_s(), machine_before = machine_busy_s();
  for (int i = 0; i < reps; ++i) comm::all_reduce_sum(t, g);
  const double used = cpu_s() - before, machine_used = machine_busy_s() - machine_before;
  const double moved = reps * 2 * 2.0 * (g.size - 1) / g.size * static_cast<double>(n) * 4;  // sent + received
  // The ranks of this machine: their own CPU summed.
  std::vector<double> own(static_cast<size_t>(g.size), 0.0);
  own[static_cast<size_t>(g.rank)] = used;
  own = comm::sum(own, g);
  double ours = 0;
  int here = 0;
  for (int q = 0; q < g.size; ++q)
    if (machine[static_cast<size_t>(q)] == machine[static_cast<size_t>(g.rank)]) ours += own[static_cast<size_t>(q)], ++here;
  const double extra = machine_before < 0 ? 0.0 : std::max(0.0, machine_used - ours) / here;
  return {std::max(0.0, used / moved), extra / moved};
}

// Whether the ranks of some pool share its cores, by the rule the planner reads the profile with
// (planner::settle_shared_pools: the pool's mean solo speed-up), so that the pairs are timed alone
// exactly where the cost model uses those timings. Collective over g.
static bool any_pool_shares(double solo_speedup, const std::vector<int>& host, const comm::Group& g) {
  std::vector<double> speedups(static_cast<size_t>(g.size), 0.0);
  speedups[static_cast<size_t>(g.rank)] = solo_speedup;
  speedups = comm::sum(speedups, g);
  std::vector<planner::RankProfile> ranks(static_cast<size_t>(g.size));
  for (size_t q = 0; q < ranks.size(); ++q) {
    ranks[q].host = host[q];
    ranks[q].host_ranks = static_cast<int>(std::count(host.begin(), host.end(), host[q]));
    ranks[q].solo_speedup = speedups[q];
  }
  planner::settle_shared_pools(ranks);
  return std::any_of(ranks.begin(), ranks.end(), [](const planner::RankProfile& p) { return p.shares_cores; });
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

// One block split over the pair tp (tensor parallelism of 2) at every size, forward and backward:
// medians of `repeats` rounds of the sizes in turn (as measure's), each timing the same number of
// runs on both ranks (their all-reduces pair up), enough for min_sample_s (at least
// kTp2MinSampleS) on the slower one.
std::vector<std::pair<double, double>> tp2_block_s(const ProfileRequest& r, const model::GPT2Config& c,
                                                   const model::Block& local, const comm::Group& tp) {
  auto opts = torch::TensorOptions().device(r.device);
  model::AutocastGuard autocast(r.precision, r.device);
  struct AtSize {
    at::Tensor x, g, y;
    int runs = 1;
    std::vector<double> fs, bs;
  };
  std::vector<AtSize> at(r.micro_batch.size());
  auto run = [&](AtSize& s, double* fwd, double* bwd) {
    sync(r.device);
    const auto t0 = Clock::now();
    s.y = parallel::tensor::tp_block_forward(local, s.x, c, tp);
    sync(r.device);
    const auto t1 = Clock::now();
    s.y.backward(s.g);
    sync(r.device);
    *fwd += std::chrono::duration<double>(t1 - t0).count(), *bwd += std::chrono::duration<double>(Clock::now() - t1).count();
  };
  const double min_s = std::max(r.min_sample_s, kTp2MinSampleS);
  for (size_t k = 0; k < at.size(); ++k) {
    AtSize& s = at[k];
    s.x = torch::randn({r.micro_batch[k], r.seq_len, c.n_embd}, opts).requires_grad_(true);
    s.g = torch::randn({r.micro_batch[k], r.seq_len, c.n_embd}, opts);
    double f = 0, w = 0;
    run(s, &f, &w);  // warm-up, and how long one run takes
    s.runs = std::max(1, static_cast<int>(comm::max(std::ceil(min_s / std::max(f + w, 1e-6)), tp)));
  }
  for (int i = 0; i < r.repeats; ++i)
    for (AtSize& s : at) {
      double f = 0, w = 0;
      for (int k = 0; k < s.runs; ++k) run(s, &f, &w);
      s.fs.push_back(f / s.runs), s.bs.push_back(w / s.runs);
    }
  std::vector<std::pair<double, double>> out;
  for (const AtSize& s : at) out.emplace_back(median_of(s.fs), median_of(s.bs));
  return out;
}

// The pairs of a pool as a pipeline's stages run them (1F1B): pair k runs `ahead` = pairs - 1 - k
// forwards first, waits for pair k - 1's forward before each of its own and for pair k + 1's
// backward before each of its own (a 1-element token stands for the activation and the gradient:
// their transfer is the cost model's p2p term); prev / next: this rank's counterpart in those
// pairs (ranks of g), -1 at the ends. A forward runs the block `blocks` times in a row (a stage
// of several: its compute per token long beside the link's round trip, as in training). Medians
// of `repeats` means of `runs` steady-state forwards and backwards per block (each timed without
// its wait); then `tail` = k more (every pair runs as many forwards) and the last backwards.
std::pair<double, double> tp2_pipeline_s(const ProfileRequest& r, const model::GPT2Config& c, const model::Block& local,
                                         const comm::Group& tp, const comm::Group& g, int prev, int next, int ahead,
                                         int tail, int blocks, int runs, int64_t b) {
  auto opts = torch::TensorOptions().device(r.device);
  model::AutocastGuard autocast(r.precision, r.device);
  at::Tensor x = torch::randn({b, r.seq_len, c.n_embd}, opts).requires_grad_(true);
  at::Tensor grad = torch::randn({b, r.seq_len, c.n_embd}, opts);
  const at::Tensor token = torch::zeros({1});
  at::Tensor got = torch::zeros({1});
  std::deque<at::Tensor> ys;
  std::vector<comm::Pending> sends;  // waited at the end: a send may wait for its receive
  constexpr int kTag = 1 << 20;
  int forwards = 0, backwards = 0;
  auto forward = [&] {
    if (prev >= 0) comm::recv_async(got, prev, kTag + 2 * forwards, g).wait();
    sync(r.device);
    const auto t0 = Clock::now();
    at::Tensor y = x;
    for (int k = 0; k < blocks; ++k) y = parallel::tensor::tp_block_forward(local, y, c, tp);
    ys.push_back(y);
    sync(r.device);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (next >= 0) sends.push_back(comm::send_async(token, next, kTag + 2 * forwards, g));
    ++forwards;
    return t;
  };
  auto backward = [&] {
    if (next >= 0) comm::recv_async(got, next, kTag + 2 * backwards + 1, g).wait();
    sync(r.device);
    const auto t0 = Clock::now();
    ys.front().backward(grad);
    ys.pop_front();
    sync(r.device);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (prev >= 0) sends.push_back(comm::send_async(token, prev, kTag + 2 * backwards + 1, g));
    ++backwards;
    return t;
  };
  for (int k = 0; k < ahead; ++k) forward();
  std::vector<double> fs, bs;
  for (int i = 0; i < r.repeats; ++i) {
    double f = 0, w = 0;
    for (int k = 0; k < runs; ++k) f += forward(), w += backward();
    fs.push_back(f / runs / blocks), bs.push_back(w / runs / blocks);
  }
  for (int k = 0; k < tail; ++k) forward(), backward();  // every pair runs as many forwards
  while (!ys.empty()) backward();
  for (comm::Pending& p : sends) p.wait();
  return {median_of(fs), median_of(bs)};
}

// RankProfile::tp2_*: this rank's pair (its pool's ranks paired in rank order) times a tp-2 block
// at every size with every pair busy, then (alone_too: some pool shares cores) a pool's pairs as a
// pipeline's stages (tp2_pipeline_s), then each pair alone in turn at every size. Collective over
// w.world; a rank without a partner only waits.
void measure_tp2(const ProfileRequest& r, comm::World& w, const std::vector<int>& host,
                 const std::vector<int>& index_in_host, bool alone_too, planner::RankProfile* mine) {
  const comm::Group& g = w.world;
  const int me = g.rank, pair = index_in_host[static_cast<size_t>(me)] / 2;
  int partner = -1;
  for (int q = 0; q < g.size; ++q)
    if (q != me && host[static_cast<size_t>(q)] == host[static_cast<size_t>(me)] && index_in_host[static_cast<size_t>(q)] / 2 == pair)
      partner = q;
  if (r.model.n_head % 2 != 0) partner = -1;  // tp 2 needs the heads split evenly
  int most = 0;  // pairs in the largest pool
  for (int q = 0; q < g.size; ++q) most = std::max(most, index_in_host[static_cast<size_t>(q)] / 2 + 1);
  comm::Group tp;
  model::GPT2Config c = r.model;
  c.n_layer = 1, c.dropout = 0;
  model::Block local;
  if (partner >= 0) {
    tp = comm::new_group(w, "profile-tp2", {std::min(me, partner), std::max(me, partner)});
    model::GPT2 m = model_on_device(r, 1, 1);
    local = parallel::tensor::shard_block(m.h[0], c, tp.rank, 2);
  }
  comm::barrier(g);  // every pair at once
  if (partner >= 0)
    for (const auto& [f, bw] : tp2_block_s(r, c, local, tp))
      mine->tp2_fwd_s.push_back(std::max(f, 1e-6)), mine->tp2_bwd_s.push_back(std::max(bw, 1e-6));
  // In phase, the pairs of a pool interleave: one computes while the other waits in its
  // all-reduces (the planner study's rtt0 testbed: 21 ms per split block at b = 2 with both
  // pairs busy, as one pair alone); a pipeline's stages run out of phase (one's forward beside
  // the other's backward), and pipeshard's split blocks took 29-33 ms in training there.
  const int pool_size = static_cast<int>(std::count(host.begin(), host.end(), host[static_cast<size_t>(me)]));
  const int paired = pool_size / 2 * 2;  // the pool's ranks that have a partner
  const int index = index_in_host[static_cast<size_t>(me)];
  auto rank_of = [&](int i) {  // the rank of this pool with index i
    for (int q = 0; q < g.size; ++q)
      if (host[static_cast<size_t>(q)] == host[static_cast<size_t>(me)] && index_in_host[static_cast<size_t>(q)] == i) return q;
    return -1;
  };
  const bool staged = partner >= 0 && alone_too && paired >= 4;
  const int prev = staged && index >= 2 ? rank_of(index - 2) : -1, next = staged && index + 2 < paired ? rank_of(index + 2) : -1;
  // The tokens' round trip (the testbed's sites 100 ms apart: 100 ms, beside a split block's 22 ms
  // at b = 2: one block per token would leave the pairs mostly apart).
  at::Tensor token = torch::zeros({1});
  double rtt = 0;
  for (int i = 0; i < 3 && prev >= 0; ++i)
    comm::recv_async(token, prev, 7, g).wait(), comm::send_async(token, prev, 8, g).wait();
  for (int i = 0; i < 3 && next >= 0; ++i) {
    const auto t0 = Clock::now();
    comm::send_async(token, next, 7, g).wait(), comm::recv_async(token, next, 8, g).wait();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    rtt = i == 0 ? t : std::min(rtt, t);
  }
  rtt = comm::max(rtt, g);
  for (size_t k = 0; k < r.micro_batch.size(); ++k) {
    // as many steady-state runs and blocks per token everywhere (the coupled pairs must agree) as
    // the slowest in-phase pair needs: a sample of min_s, compute per token twice the round trip
    const double one = partner >= 0 ? mine->tp2_fwd_s[k] + mine->tp2_bwd_s[k] : 0;
    const int blocks = std::max(1, static_cast<int>(comm::max(one > 0 ? std::ceil(2 * rtt / one) : 1, g)));
    const double min_s = std::max(r.min_sample_s, kTp2MinSampleS);
    const int runs = std::max(1, static_cast<int>(comm::max(one > 0 ? std::ceil(min_s / (blocks * one)) : 1, g)));
    if (!staged) continue;
    const auto [f, bw] = tp2_pipeline_s(r, c, local, tp, g, prev, next, paired / 2 - 1 - pair, pair, blocks, runs, r.micro_batch[k]);
    mine->tp2_pipe_fwd_s.push_back(std::max(f, 1e-6)), mine->tp2_pipe_bwd_s.push_back(std::max(bw, 1e-6));
  }
  for (int k = 0; alone_too && k < most; ++k) {  // one pair per pool at a time alone, at every size
    comm::barrier(g);
    if (partner < 0 || pair != k) continue;
    for (const auto& [f, bw] : tp2_block_s(r, c, local, tp)) mine->tp2_alone_s.push_back(std::max(f + bw, 1e-6));
  }
  comm::barrier(g);
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
  hashes_of[static_cast<size_t>(g.rank)] = hash_of(host_name() + "|" + (cg ? cg : ""));
  machines_of[static_cast<size_t>(g.rank)] = hash_of(host_name());
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

// What every rank sees of its machine's CPUs (planner/pool_cores.h), gathered.
std::vector<planner::CpuFacts> gather_cpu_facts(const std::string& device, const comm::Group& g) {
  const host::CpuCount n = host::cpu_count();
  const auto [quota, period] = cpu_quota_s();
  std::vector<double> v(4 * static_cast<size_t>(g.size), 0.0);
  double* me = v.data() + 4 * g.rank;
  me[0] = n.logical, me[1] = n.physical, me[2] = device == "cpu" ? host::cpu_threads() : 0;
  me[3] = period > 0 ? quota / period : 0;
  v = comm::sum(v, g);
  std::vector<planner::CpuFacts> facts;
  for (int q = 0; q < g.size; ++q) {
    const double* f = v.data() + 4 * q;
    facts.push_back({static_cast<int>(f[0]), static_cast<int>(f[1]), static_cast<int>(f[2]), f[3]});
  }
  return facts;
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

// Every rank measures (collective): its compute with all busy, then, where ranks share a pool, one
// rank per pool at a time alone (solo_speedup); the CPU cost of communication, the tp-2 pairs; the
// ranks of a machine add their entries to the cache in turn (one file).
planner::RankProfile measure_rank(const ProfileRequest& r, comm::World& w, const RankPools& pools,
                                  const std::string& key, const std::string& device) {
  const comm::Group& g = w.world;
  const bool shares = pools.ranks_on.at(pools.host[static_cast<size_t>(g.rank)]) > 1;
  const int mine_in_host = pools.index_in_host[static_cast<size_t>(g.rank)];
  planner::RankProfile mine = measure(r, g);
  mine.device = device;
  mine.runtime = host::runtime_settings();
  mine.source = "measured";
  mine.solo_speedup = 1;
  for (int k = 0; k < pools.most(); ++k) {
    comm::barrier(g);
    if (shares && mine_in_host == k) {
      const size_t last = mine.micro_batch.size() - 1;
      mine.solo_speedup = std::max(1.0, (mine.block_fwd_s[last] + mine.block_bwd_s[last]) / solo_block_s(r));
    }
  }
  comm::barrier(g);
  const CommCpuPerByte comm_cpu = comm_cpu_per_byte(g, pools.machine);
  mine.comm_cpu_s_per_byte = comm_cpu.own, mine.machine_extra_cpu_s_per_byte = comm_cpu.machine_extra;
  measure_tp2(r, w, pools.host, pools.index_in_host, any_pool_shares(mine.solo_speedup, pools.host, g), &mine);
  for (int k = 0; k < pools.most(); ++k) {
    comm::barrier(g);
    if (mine_in_host == k) store_in_cache(key, mine);
  }
  return mine;
}

}  // namespace

std::vector<planner::RankProfile> profile_job(const ProfileRequest& request, comm::World& w) {
  const comm::Group& g = w.world;
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
  // writer's copy in the next job.
  const planner::ProfileShape s = profile_shape(r.model, r.seq_len, r.precision);
  const host::DeviceInfo dev = host::describe_device(r.device, r.precision, host::cpu_threads(), 0, 0);
  const std::string key = fmt::format("v9 | {} | {} | rank {} of {} here | cpu {} | C {} H {} Vp {} T {} {} | b {}", dev.name,
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
  for (const std::string& line : planner::fit_pool_cores(all, gather_cpu_facts(r.device, g)))
    if (g.rank == 0) std::fprintf(stderr, "profile: %s\n", line.c_str());
  planner::settle_shared_pools(all);  // alone its ranks run notably faster (on average)
  return all;
}

}  // namespace slm::autoplan
