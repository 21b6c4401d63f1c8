// parallel/pipeline/schedule.h: pipeline schedules as plain action lists, and a simulator.
// Owns: Action, schedule_actions (none | gpipe | 1f1b | interleaved), simulate (dependencies,
// deadlock detection, ideal makespan and bubble), theoretical_bubble. Pure: no torch, no c10d.
// The executor (executor.h) runs one rank's list; the lists are unit-tested and printable.
// Notation: P pipeline ranks, v model chunks per rank (virtual stages; 1 except interleaved), M
// micro-batches. Chunk c of rank s is virtual stage c*P + s; stage 0 holds the embeddings and
// stage P*v-1 the head and loss.
//   gpipe:       F0 F1 .. F(M-1) B0 B1 .. B(M-1)
//   1f1b:        min(P-s-1, M) warm-up forwards, then alternate F and B, then the remaining B.
//   interleaved: Megatron's interleaved 1F1B: forward k runs chunk (k/P)%v of micro-batch
//                (k/(P*v))*P + k%P; warm-up (P-s-1)*2 + (v-1)*P; needs M % P == 0.
#pragma once
#include <string>
#include <vector>

namespace slm::parallel::pipeline {

struct Action {
  enum Op { F, B } op = F;
  int micro = 0;  // micro-batch index
  int chunk = 0;  // model chunk on this rank (0 unless interleaved)
  bool operator==(const Action& o) const { return op == o.op && micro == o.micro && chunk == o.chunk; }
};

// UserError (one line) for an unknown name or an impossible combination.
void validate_schedule(const std::string& name, int ranks, int micro, int chunks);
// Rank `rank`'s actions (0 <= rank < ranks). "none" (one stage) is F0 B0 F1 B1 ...: one
// micro-batch's activations alive at a time.
std::vector<Action> schedule_actions(const std::string& name, int ranks, int rank, int micro, int chunks);
// Most forwards of `rank` whose backward has not run yet (the activations it keeps), without
// building the list: min(warm-up + 1, forwards) for the 1F1B family, M for GPipe.
int max_in_flight(const std::string& name, int ranks, int rank, int micro, int chunks);
// "F0 F1 B0 ..." (chunk shown as F0.1 when chunks > 1).
std::string to_string(const std::vector<Action>& actions, int chunks);

struct Simulation {
  bool deadlock = false;        // some rank waits forever (message names it)
  std::string message;
  double makespan = 0;          // time units until the last action ends
  std::vector<double> bubble;   // per rank: idle fraction of the makespan
  std::vector<double> finish;   // per rank: when its last action ends
  int max_in_flight = 0;        // most forwards whose backward has not run, on any rank (memory)
};

// Costs per virtual stage (P * chunks entries): compute of a forward and a backward, and the
// time for its output to reach the next stage (send_fwd) and its input gradient to reach the
// previous one (send_bwd); sends are asynchronous: the sender goes on at once.
// notice_fwd / notice_bwd (empty: none): Gloo moves a message only once its receiver has posted the
// receive and told the sender so, one way over the same link (measured on the testbed: a 4 B
// message posted for at the send arrived after 2α, posted for 200 ms before after α). The executor
// posts the receives of actions 0..K-1 at the start and that of action i + K when action i's input
// has arrived (K = receives_ahead; parallel/pipeline/executor.cpp), so a message leaves at
// max(sender's end, that moment + notice) and arrives `send` later.
// start (empty: all 0): per pipeline rank, when it begins its list and posts its first receives
// (a later stage that waited for the previous step's last number starts the next step later).
struct StageCosts {
  std::vector<double> fwd, bwd, send_fwd, send_bwd;
  std::vector<double> notice_fwd, notice_bwd;
  int receives_ahead = 1;
  std::vector<double> start;
};

// How many actions ahead the executor posts its receives where messages pair by tag (Gloo): enough
// that a receiver's notice crosses a slow link while it computes; each is one activation's buffer.
constexpr int kReceivesAhead = 8;

// Runs all ranks' lists with forward cost tf and backward cost tb per chunk, free and
// asynchronous sends, and receives that block in list order (the executor's semantics).
Simulation simulate(const std::vector<std::vector<Action>>& per_rank, int chunks, double tf, double tb);
// The same with per-stage costs and transfer times (the planner's cost model).
Simulation simulate(const std::vector<std::vector<Action>>& per_rank, int chunks, const StageCosts& costs);

// (P-1) / (v*M + P-1): the idle fraction of every schedule here with equal stages (for
// interleaved, with v chunks per rank); 0 for one rank.
double theoretical_bubble(int ranks, int micro, int chunks);

}  // namespace slm::parallel::pipeline
