// parallel/plan.h: the plan: one readable description of a parallel layout that drives
// everything parallel/ does (a later planner writes plans). TOML in and out. Pure: no torch.
// Owns: Plan, StagePlan, ModelShape, PlanFlags, plan_from_flags (presets), parse_plan /
// plan_to_toml, validate_plan, role_of (what a rank does), estimate_memory, describe_plan.
// Worked example: 8 ranks, 3 pipeline stages, 2 data-parallel replicas, the middle stage on 4
// ranks with tp 2 (e.g. the bigger GPUs), replicas with micro-batches of 3 and 1 sequences:
//   [[stage]] layers = [0, 3]   tp = 1   ranks = [0, 1]         # replica 0: 0;   replica 1: 1
//   [[stage]] layers = [3, 6]   tp = 2   ranks = [2, 3, 4, 5]   # replica 0: 2,3; replica 1: 4,5
//   [[stage]] layers = [6, 8]   tp = 1   ranks = [6, 7]
//   micro_batch = [3, 1]   micro_batches = 4   schedule = "1f1b"
// -> 4 * (3 + 1) = 16 sequences per step; replica 1's gradient counts 1/4 of the tokens. The
// first and last stage need the same tp (they share the tied embedding).
// With interleaving (virtual_stages = v) the stage list has pp * v entries and stage k runs on the
// ranks of stage k % pp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parallel/config.h"

namespace slm::parallel {

struct StagePlan {
  int64_t first = 0, end = 0;  // layers [first, end); the embeddings go with layer 0, the head with the last
  int tp = 1;                  // tensor-parallel degree inside the stage (divides n_head)
  std::vector<int> ranks;      // dp * tp global ranks: replica-major, tp rank innermost
};

struct Plan {
  std::vector<StagePlan> stages;     // in model order (pp * virtual_stages of them)
  int pp = 1;                        // pipeline depth: distinct rank sets
  int virtual_stages = 1;            // model chunks per rank (interleaved schedule)
  int dp = 1;                        // data-parallel replicas of the whole pipeline
  int zero = 0;                      // ZeRO stage over each stage's data-parallel group
  std::string schedule = "none";     // none | gpipe | 1f1b | interleaved
  int64_t micro_batches = 1;         // per replica per optimizer step
  std::vector<int64_t> micro_batch;  // per replica: sequences per micro-batch (may differ)
  std::vector<int> job_ranks;        // the launched job's ranks this plan runs on, ascending from 0
                                     // (plan rank i = job rank job_ranks[i]; the others exit at
                                     // start: a site the planner left out); empty = every rank
  int64_t zero_ranks_per_site = 0;   // hybrid sharding ([parallel] zero_scope = "site" with
                                     // [dist] ranks_per_site): ZeRO state split inside each site.
                                     // Not part of the plan file; for the memory estimate.
  int64_t sync_ranks_per_site = 0;   // DiLoCo ([sync] mode = "diloco" with [dist] ranks_per_site):
                                     // sites of this many consecutive ranks, each holding whole
                                     // replicas; data-parallel groups stay inside a site (parallel/
                                     // diloco.h). Not part of the plan file.
  int64_t global_batch() const;      // micro_batches * sum(micro_batch)
};

// What validation and the memory estimate need of the model.
struct ModelShape {
  int64_t n_layer = 0, n_head = 0, n_embd = 0, vocab_padded = 0, block_size = 0;
  bool recompute = false;
  // What the backward pass keeps per activation: 4 bytes in fp32, 2 under bf16/fp16 autocast;
  // attention_matrix = the (T, T) softmax is stored (explicit attention; SDPA's fused kernels
  // recompute it instead).
  int activation_bytes = 4;
  bool attention_matrix = true;
  bool sequence_parallel = false;  // with tp > 1: a block's activations outside its linears are 1/tp
};

// The flag form: --dp --tp --pp --virtual-stages --micro-batches --schedule.
struct PlanFlags {
  int64_t dp = -1;              // -1 = world / (tp * pp)
  int64_t tp = 1, pp = 1, virtual_stages = 1;
  int64_t micro_batches = 0;    // 0 = batch_size / (micro_batch * dp)
  std::string schedule = "auto";  // auto = none for pp 1, else 1f1b (interleaved if virtual_stages > 1)
  int64_t zero = 0;
};

// Even preset: layers split as evenly as possible (earlier stages take the remainder), stage s on
// ranks [s*dp*tp, (s+1)*dp*tp), every replica with micro_batch sequences. UserError if the
// numbers do not fit (one line naming every factor).
Plan plan_from_flags(const PlanFlags& f, int64_t n_layer, int world, int64_t batch_size, int64_t micro_batch);
// After an elastic restart onto `world` ranks: f itself when its degrees fit the world and `fits`
// (the memory caps; it is also asked whether a layout is valid at all), else the nearest even preset
// that does: tp the largest common divisor of tp and world (so it still divides the heads), pp the
// largest divisor of world / tp up to pp, then deeper pipelines (less memory per rank), dp the
// rest (ZeRO 3 becomes 2 where it is 1), the micro-batch count from the batch size (so the global batch stays), virtual stages kept
// while they fit the layers. When nothing fits the memory, the
// nearest preset that fits the world (the memory check then names the shortfall). `changed` says
// what moved and why ("" when f stays).
PlanFlags fit_to_world(const PlanFlags& f, int world, int64_t n_layer, const std::function<bool(const PlanFlags&)>& fits,
                       std::string* changed);
// UserError (one line, with `where`) for malformed TOML, unknown keys or wrong types. zero is -1
// when the file does not set it.
Plan parse_plan(const std::string& toml_text, const std::string& where);
// The plan of a run: c.plan's file (its zero, else c.zero) or the even preset of c's degrees.
// UserError unless its global batch is batch_size.
Plan resolve_plan(const ParallelConfig& c, int64_t n_layer, int world, int64_t batch_size, int64_t micro_batch);
std::string plan_to_toml(const Plan& p);

// UserError (one line) unless: the stages cover layers 0..n_layer-1 in order; every plan rank
// (0..world-1, or 0..job_ranks.size()-1 where job_ranks are ranks of a job of `world`) appears in
// exactly one rank set; each stage has dp*tp ranks; tp divides n_head and
// the padded vocabulary; first and last stage share tp (tied embedding); the schedule fits.
void validate_plan(const Plan& p, const ModelShape& m, int world);

// What one rank does. Stages are indices into plan.stages.
struct RankRole {
  int pipe = 0;              // pipeline rank (which rank set), 0..pp-1
  int replica = 0, tp_rank = 0;
  std::vector<int> stages;   // its model chunks, in chunk order (stage = chunk * pp + pipe)
};
RankRole role_of(const Plan& p, int rank);
// Global rank of (stage, replica, tp rank).
int rank_at(const Plan& p, int stage, int replica, int tp_rank);

// DiLoCo: the site (rank / ranks_per_site) of each replica. UserError (one line) unless each replica's
// ranks lie in one site and every site holds the same number of replicas.
std::vector<int> replica_sites(const Plan& p, int64_t ranks_per_site);
// The same plan with replicas outermost: replica r of stage k on ranks ((r*pp + k%pp)*tp + j), so
// that each replica's pipeline occupies consecutive ranks (a site). Needs one tp for every stage.
Plan replica_major(Plan p);

struct MemoryEstimate {
  double params = 0, grads = 0, optimizer = 0, activations = 0;  // bytes
  double total() const { return params + grads + optimizer + activations; }
};
// Per rank, fp32 training state (parameters 4 B, gradients 4 B, AdamW 8 B per parameter (+ 12 B / L
// for DiLoCo's outer state with L ranks per site), divided
// by dp where ZeRO shards them) plus activations of the micro-batches the schedule keeps in flight
// (Korthikanti et al.'s per-layer formula at m.activation_bytes, without the attention-matrix term
// when m.attention_matrix is false; recomputation keeps block inputs only).
// ZeRO-3 shards the parameters too, keeps the gathered embeddings and final LayerNorm (with their
// gradients) and one or two gathered blocks, and recomputes every block in backward
// (parallel/zero3.cpp).
MemoryEstimate estimate_memory(const Plan& p, const ModelShape& m, int64_t seq_len, int rank);
// How many ranks split `rank`'s ZeRO state: its dp replicas, or with zero_ranks_per_site those in
// its site when every site holds the same number of them (as comm/hierarchy.cpp then shards).
int zero_shards(const Plan& p, int rank);

// One rank's memory limit for the estimate, and where it comes from (for the message).
struct MemoryCap {
  double gb = 0;          // 0 = none
  std::string from;       // e.g. "parallel.memory_cap_gb", "site b's memory in cluster.toml", "its GPU's memory"
  bool whole_device = false;  // a device's whole memory: what the runtime itself holds counts too
  double in_use_gb = 0;       // that share (whole_device caps only)
  // The memory this rank shares with the other CPU ranks of its machine (host/memory_limit.h):
  // the estimates of the ranks with the same pool plus what their runtimes hold must fit it together.
  int machine_pool = -1;  // -1: none (a GPU rank, or not known)
  double machine_gb = 0, resident_gb = 0;  // the machine's memory; what this rank's runtime holds now
  std::string machine_from{};              // e.g. "this machine's memory"
};
// The smaller of two caps (a cap of 0 is none).
MemoryCap tighter(const MemoryCap& a, const MemoryCap& b);
// UserError (one line, naming the rank, its estimate, its cap and where the cap comes from) when
// rank r's estimate plus caps[r].in_use_gb exceeds caps[r].gb, or when the ranks of one machine
// pool together need more than its machine_gb; ranks past caps.size() have no cap.
void check_memory_caps(const Plan& p, const ModelShape& m, int64_t seq_len, const std::vector<MemoryCap>& caps);

// Readable, several lines: stages, layers, ranks per replica, schedule, per-rank memory.
std::string describe_plan(const Plan& p, const ModelShape& m, int64_t seq_len);

}  // namespace slm::parallel
