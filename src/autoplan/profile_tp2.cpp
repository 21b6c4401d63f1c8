// autoplan/profile_tp2.cpp: see profile_tp2.h.
#include "autoplan/profile_tp2.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <torch/torch.h>

#include "autoplan/profile_timing.h"
#include "comm/collectives.h"
#include "model/autocast.h"
#include "parallel/tensor/layers.h"

namespace slm::autoplan {

namespace {

constexpr double kTp2MinSampleS = 0.1;  // the shortest timing of a tp pair anywhere: timed one run
                                        // at a time, 2 ranks with 2 cores of their own gave
                                        // 19-27 ms per block at b = 2 in three profiles

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
    device_sync(r.device);
    const auto t0 = Clock::now();
    s.y = parallel::tensor::tp_block_forward(local, s.x, c, tp);
    device_sync(r.device);
    const auto t1 = Clock::now();
    s.y.backward(s.g);
    device_sync(r.device);
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
// pairs (ranks of g), -1 at the ends. A forward runs `blocks` blocks in a row (a stage of several:
// its compute per token long beside the link's round trip, as in training), taken in turn from
// `row`, distinct blocks as a stage's are (one block run again and again keeps its weights in
// cache; on the AMX Xeon VM's rtt0 testbed the pairs took 34.2 and 31.0 ms per split block at
// b = 2 in two profiles, against 32.6 and 29.3 for one block in phase: within their scatter). Medians
// of `repeats` means of `runs` steady-state forwards and backwards per block (each timed without
// its wait); then `tail` = k more (every pair runs as many forwards) and the last backwards.
std::pair<double, double> tp2_pipeline_s(const ProfileRequest& r, const model::GPT2Config& c,
                                         const std::vector<model::Block>& row, const comm::Group& tp, const comm::Group& g,
                                         int prev, int next, int ahead, int tail, int blocks, int runs, int64_t b) {
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
    device_sync(r.device);
    const auto t0 = Clock::now();
    at::Tensor y = x;
    for (int k = 0; k < blocks; ++k) {
      const size_t i = static_cast<size_t>(forwards) * static_cast<size_t>(blocks) + static_cast<size_t>(k);
      y = parallel::tensor::tp_block_forward(row[i % row.size()], y, c, tp);
    }
    ys.push_back(y);
    device_sync(r.device);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (next >= 0) sends.push_back(comm::send_async(token, next, kTag + 2 * forwards, g));
    ++forwards;
    return t;
  };
  auto backward = [&] {
    if (next >= 0) comm::recv_async(got, next, kTag + 2 * backwards + 1, g).wait();
    device_sync(r.device);
    const auto t0 = Clock::now();
    ys.front().backward(grad);
    ys.pop_front();
    device_sync(r.device);
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

}  // namespace

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
  const int pool_size = static_cast<int>(std::count(host.begin(), host.end(), host[static_cast<size_t>(me)]));
  const int paired = pool_size / 2 * 2;  // the pool's ranks that have a partner
  const bool staged = partner >= 0 && alone_too && paired >= 4;  // timed as a pipeline's stages too
  comm::Group tp;
  model::GPT2Config c = r.model;
  c.dropout = 0;
  std::vector<model::Block> row;  // this rank's slices of a block, up to kRowBlocks where staged
  if (partner >= 0) {
    tp = comm::new_group(w, "profile-tp2", {std::min(me, partner), std::max(me, partner)});
    const int64_t layers = staged ? std::min<int64_t>(c.n_layer, kRowBlocks) : 1;
    model::GPT2 m = model_on_device(r, layers, 1);
    for (const model::Block& b : m.h) row.push_back(parallel::tensor::shard_block(b, c, tp.rank, 2));
  }
  c.n_layer = 1;
  const model::Block local = row.empty() ? model::Block{} : row[0];
  comm::barrier(g);  // every pair at once
  if (partner >= 0)
    for (const auto& [f, bw] : tp2_block_s(r, c, local, tp))
      mine->tp2_fwd_s.push_back(std::max(f, 1e-6)), mine->tp2_bwd_s.push_back(std::max(bw, 1e-6));
  // In phase, the pairs of a pool interleave: one computes while the other waits in its
  // all-reduces (the planner study's rtt0 testbed: 21 ms per split block at b = 2 with both
  // pairs busy, as one pair alone); a pipeline's stages run out of phase (one's forward beside
  // the other's backward), and pipeshard's split blocks took 29-33 ms in training there.
  const int index = index_in_host[static_cast<size_t>(me)];
  auto rank_of = [&](int i) {  // the rank of this pool with index i
    for (int q = 0; q < g.size; ++q)
      if (host[static_cast<size_t>(q)] == host[static_cast<size_t>(me)] && index_in_host[static_cast<size_t>(q)] == i) return q;
    return -1;
  };
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
    const auto [f, bw] = tp2_pipeline_s(r, c, row, tp, g, prev, next, paired / 2 - 1 - pair, pair, blocks, runs, r.micro_batch[k]);
    mine->tp2_pipe_fwd_s.push_back(std::max(f, 1e-6)), mine->tp2_pipe_bwd_s.push_back(std::max(bw, 1e-6));
  }
  for (int k = 0; alone_too && k < most; ++k) {  // one pair per pool at a time alone, at every size
    comm::barrier(g);
    if (partner < 0 || pair != k) continue;
    for (const auto& [f, bw] : tp2_block_s(r, c, local, tp)) mine->tp2_alone_s.push_back(std::max(f + bw, 1e-6));
  }
  comm::barrier(g);
}

}  // namespace slm::autoplan
