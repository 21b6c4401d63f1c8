// planner/profile.h: measured compute per rank, what the cost model is driven by. Owns:
// ProfileShape (the model and precision a profile was measured for), RankProfile, ComputeProfile,
// settle_shared_pools and pool_compute (what a pool's ranks have in common), profile_to_json /
// parse_profile (which applies both), check_profile (one-line error for another model or world),
// at_batch (interpolation over micro-batch sizes), profile_from_devices (the device table's
// estimate when nothing was measured). Pure: no torch. The measuring side is autoplan/profile.h
// (`slm profile`, and `parallel.plan = "auto"` at start).
// Times are seconds per micro-batch of b sequences of seq_len tokens on one rank, at tp 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/cluster.h"

namespace slm::planner {

struct ProfileShape {
  int64_t n_embd = 0, n_head = 0, vocab_padded = 0, seq_len = 0;
  std::string precision = "fp32";
  bool operator==(const ProfileShape& o) const {
    return n_embd == o.n_embd && n_head == o.n_head && vocab_padded == o.vocab_padded && seq_len == o.seq_len &&
           precision == o.precision;
  }
};

struct RankProfile {
  std::string device;                  // e.g. "AMD EPYC 7B13 x1 threads" or "T4 (device table)"
  std::vector<int64_t> micro_batch;    // sizes measured, ascending
  std::vector<double> block_fwd_s;     // one transformer block, forward, per size
  std::vector<double> block_bwd_s;     // its backward
  std::vector<double> embed_s;         // token + position embeddings, forward + backward
  std::vector<double> head_fwd_s;      // final LayerNorm + tied head + cross-entropy, forward
  std::vector<double> head_bwd_s;      // its backward
  double optim_s_per_param = 0;        // AdamW step, seconds per parameter
  double block_scale = 1;              // blocks in a row / one block alone (weights out of cache,
                                       // per-block overheads): multiplies the block times
  double overhead_bytes = 0;           // the runtime's memory before any model state
  std::string source = "measured";     // "measured" | "cached" | "device table"
  std::string runtime;                 // the speed settings it ran with (host/runtime.h), e.g.
                                       // "OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE ..."
  // Ranks that share a machine's cores (a testbed, several CPU ranks per node): the times above
  // were measured with all of them busy; alone a rank runs solo_speedup times faster. The cost
  // model interpolates by how many are busy (pipeline bubbles free cores) and does not overlap
  // communication with compute there (no spare core for it).
  int host = 0;                        // CPU pool: the machine (host name), or a cgroup on it (a
                                       // testbed site's cpus)
  int host_ranks = 1;                  // ranks of this job in that pool
  int machine = -1;                    // the machine the pool is on (its host name); -1 = unknown:
                                       // a machine of the pool alone
  bool shares_cores = false;           // they share its cores: alone its ranks run > 1.1x faster
                                       // (on average: settle_shared_pools)
  double solo_speedup = 1;             // block time with all busy / alone
  double comm_cpu_s_per_byte = 0;      // CPU time (Gloo threads + kernel) per byte the rank sends
                                       // or receives, measured during an all-reduce; 0 = unknown
  double machine_extra_cpu_s_per_byte = 0;  // over that all-reduce, the CPU its machine spent beyond
                                            // its ranks' own (the kernel's forwarding; on a testbed
                                            // the link emulator), this rank's even share, per byte
                                            // it moved; 0 = unknown
  double alone_cores = 1;              // cores a rank has alone: 1, or its CPU quota where less
                                       // (a testbed site of cpus = 0.5); its pool has
                                       // host_ranks / solo_speedup x alone_cores cores
  // Tensor parallelism as it runs: the rank and its neighbour in the pool (its ranks paired in
  // order: 1st + 2nd, 3rd + 4th, ...) run one block split over tp 2 (parallel/tensor/layers.h: its
  // share of the compute and the 2 all-reduces forward, 2 backward), every pair at once, and where
  // ranks share cores each pair alone; empty for a rank without a partner. On the testbed (4
  // ranks, 2 cores) a pair's block at b = 2 took 20-25 ms all busy where half a block plus 4
  // all-reduces at the link's α-β come to 18, and about as long alone (its all-reduces wait on
  // wake-ups, not on cores), not the 2x faster of one rank alone; at b = 8, 1.8x.
  std::vector<double> tp2_fwd_s, tp2_bwd_s;  // per size, as block_fwd_s / block_bwd_s
  std::vector<double> tp2_alone_s;           // per size, forward + backward with the pair alone
  // Where two or more pairs share a pool's cores: the pairs run as a pipeline's stages (1F1B,
  // each waiting for its neighbours' forward and backward, on up to 8 distinct blocks in turn as
  // a stage's), so one's forward runs beside the other's backward; in phase the pairs
  // interleave, one computing while the other waits (the
  // testbed's split block at b = 2: 21 ms in phase, 27-29 as stages, 26-33 in pipeshard's
  // training); empty elsewhere.
  std::vector<double> tp2_pipe_fwd_s, tp2_pipe_bwd_s;
};

struct ComputeProfile {
  ProfileShape shape;
  std::vector<RankProfile> ranks;  // by global rank
};

// A pool's ranks alone this much faster (on average) than with all of them busy: they share its
// cores (RankProfile::shares_cores).
constexpr double kSharesCoresSpeedup = 1.1;

// Sets every rank's shares_cores from its pool (host) as a whole: more than one rank there and the
// mean of their solo speed-ups above kSharesCoresSpeedup. One rank's solo run is noisy (1.00
// where the others of its pool measured 1.4-2.4, in three of the five profiles of the planner
// study of 2026-11-27c): judged alone, such a rank left the pool it time-shares, and the cost
// model stopped counting it among the pool's busy ranks and its communication as the pool's CPU.
void settle_shared_pools(std::vector<RankProfile>& ranks);

// The compute of the ranks that time-share one pool's cores (shares_cores; measured on one device
// at the same sizes): each gets their mean (block forward and backward in a row: block_scale x the
// block's times; embedding, head, optimizer), since they run on the same cores and what differs
// between them is the measurement's scatter (on the testbed's 4 ranks on 2 cores a block per
// sequence 16-31 ms, block_scale 0.92-1.67, within one profile). Judged rank by rank, a search
// made the scatter a plan: four profiles in a row of the planner study's rtt20 testbed gave
// identical ranks layer splits of 8+8+4+4 and 4+7+9+4, predicted 11-13% faster than they then
// ran (the first 16% slower than pp 2 x dp 2 beside it); and a stage took its slowest rank's
// scatter (even pipelines up to 4% slower than from the mean). Their communication's CPU (which
// depends on where a rank sends), memory and tp pairs stay per rank.
void pool_compute(std::vector<RankProfile>& ranks);

std::string profile_to_json(const ComputeProfile& p);
// UserError (one line, with `where`) for malformed JSON or inconsistent lengths.
ComputeProfile parse_profile(const std::string& text, const std::string& where);
// UserError unless p was measured for `want` on `world` ranks ("profile.json was measured for
// n_embd 256, seq_len 128, fp32; this run has n_embd 768 ...").
void check_profile(const ComputeProfile& p, const ProfileShape& want, int world, const std::string& where);
// t at micro-batch b: linear between measured sizes; outside them, proportional to b per sequence
// from the nearest measured size (below the smallest: no cheaper than its per-sequence time x b).
double at_batch(const std::vector<int64_t>& sizes, const std::vector<double>& t, double b);
// t's least-squares line a + c·b over the sizes, at each size (3 sizes or more; else t): for
// timings whose work is linear in b but which scatter from size to size, as a tp pair's on cores
// it time-shares (the planner study's: one pair 21.9 and 30.7 ms at b = 2 in two profiles of one
// testbed, 12.6 and 14.7 at b = 1, 40.7 and 39.1 at b = 4). A line that falls to 0 or below keeps t.
std::vector<double> line_fit(const std::vector<int64_t>& sizes, const std::vector<double>& t);
// Every rank of c from the device table (planner/devices.h): block forward = 24·b·T·C² + 4·b·T²·C
// FLOPs, backward twice that, head 2·b·T·C·V (backward twice), at achieved_flops; the optimizer
// reads and writes 28 bytes per parameter at the memory bandwidth. "cpu" ranks run at
// cpu_peak_flops (a measured one-core GEMM peak) times their cores (RankSpec::cores, else 1).
// sizes: the micro-batch sizes to tabulate.
ComputeProfile profile_from_devices(const Cluster& c, const ProfileShape& s, double cpu_peak_flops,
                                    const std::vector<int64_t>& sizes);

}  // namespace slm::planner
