// parallel/pipeline/simulate.cpp: runs the ranks' action lists against stage costs, with the
// executor's semantics (see schedule.h, simulate): when each action starts, the makespan, each
// rank's bubble, deadlocks. Owns no schedule (schedule.cpp builds the lists) and no real timing.
#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "parallel/pipeline/schedule.h"

namespace slm::parallel::pipeline {
namespace {

constexpr int kOwnForward = 2;  // the third arrival kind: a forward's end on its own rank

// The state of one simulation: what has arrived where, and where each rank is in its list.
struct Sim {
  const std::vector<std::vector<Action>>& lists;
  const StageCosts& c;
  int P, S;     // pipeline ranks, virtual stages (P * chunks)
  size_t ahead;  // receives posted ahead (StageCosts::receives_ahead, at least 1)
  // arrive[op][micro * S + stage]: when that action's result is available where it is needed
  // (F: at the next stage, B: at the previous one, after the transfer; kOwnForward: the
  // forward's end on its own rank, which its backward needs); -1 = not done yet.
  std::vector<double> arrive[3];
  std::vector<double> sent[2];  // [op][micro * S + stage]: when the sender finished it (the rendezvous)
  std::vector<size_t> next;     // per rank: its next action
  std::vector<double> free_at, busy;
  std::vector<std::vector<double>> started;  // per rank: each action's start
  std::vector<int> in_flight;                // per rank: forwards whose backward has not run
  int max_in_flight = 0;

  Sim(const std::vector<std::vector<Action>>& l, int chunks, const StageCosts& costs)
      : lists(l), c(costs), P(static_cast<int>(l.size())), S(P * chunks),
        ahead(static_cast<size_t>(std::max(1, costs.receives_ahead))) {
    int M = 0;
    for (const auto& list : lists)
      for (const Action& a : list) M = std::max(M, a.micro + 1);
    const size_t n = static_cast<size_t>(M) * static_cast<size_t>(S), ranks = lists.size();
    for (auto& v : arrive) v.assign(n, -1.0);
    for (auto& v : sent) v.assign(n, -1.0);
    next.assign(ranks, 0), busy.assign(ranks, 0.0), started.resize(ranks), in_flight.assign(ranks, 0);
    free_at = c.start.empty() ? std::vector<double>(ranks, 0.0) : c.start;
  }
  size_t at(const Action& a, int stage) const {
    return static_cast<size_t>(a.micro) * static_cast<size_t>(S) + static_cast<size_t>(stage);
  }
  int stage_of(const Action& a, int rank) const { return a.chunk * P + rank; }

  // When input `op` of action i of rank r is there; nullopt while it has not been sent.
  std::optional<double> input(size_t r, size_t i, int op, int stage) const {
    const Action& a = lists[r][i];
    const size_t m = at(a, stage);
    const double t = arrive[op][m];
    if (t < 0) return std::nullopt;
    if (c.notice_fwd.empty() || op == kOwnForward) return t;
    // Rendezvous: the message left once this rank's notice of the posted receive reached the sender.
    const double posted = i < ahead ? (c.start.empty() ? 0.0 : c.start[r]) : started[r][i - ahead];
    const auto from = static_cast<size_t>(stage);
    const double notice = op == Action::F ? c.notice_fwd[from] : c.notice_bwd[from];
    const double send = op == Action::F ? c.send_fwd[from] : c.send_bwd[from];
    return std::max(sent[op][m], posted + notice) + send;
  }

  // When rank r's next action can start; nullopt while an input is missing. A forward needs the
  // previous stage's forward; a backward its own forward and the next stage's backward.
  std::optional<double> ready(size_t r) const {
    const size_t i = next[r];
    if (i >= lists[r].size()) return std::nullopt;
    const Action& a = lists[r][i];
    const int vs = stage_of(a, static_cast<int>(r));
    double t = free_at[r];
    std::pair<int, int> needs[2] = {{Action::F, vs - 1}, {-1, 0}};  // (op, stage); op -1: none
    if (a.op == Action::B) needs[0] = {kOwnForward, vs}, needs[1] = {Action::B, vs + 1};
    for (auto [op, stage] : needs) {
      if (op < 0 || stage < 0 || stage >= S) continue;  // the first stage's input, the last's gradient
      const std::optional<double> in = input(r, i, op, stage);
      if (!in) return std::nullopt;
      t = std::max(t, *in);
    }
    return t;
  }

  // Runs rank r's next action from time t: its result leaves when it ends.
  void run(size_t r, double t) {
    const Action& a = lists[r][next[r]++];
    const int vs = stage_of(a, static_cast<int>(r));
    const auto k = static_cast<size_t>(vs);
    const bool fwd = a.op == Action::F;
    const double cost = fwd ? c.fwd[k] : c.bwd[k], end = t + cost;
    free_at[r] = end;
    busy[r] += cost;
    const size_t m = at(a, vs);
    arrive[a.op][m] = end + (fwd ? c.send_fwd[k] : c.send_bwd[k]);
    sent[a.op][m] = end;
    if (fwd) arrive[kOwnForward][m] = end;
    started[r].push_back(t);  // posts the receive of the action receives_ahead later
    in_flight[r] += fwd ? 1 : -1;
    max_in_flight = std::max(max_in_flight, in_flight[r]);
  }

  Simulation result(int chunks) const {
    Simulation sim;
    sim.max_in_flight = max_in_flight;
    for (size_t r = 0; r < lists.size(); ++r)
      if (next[r] < lists[r].size()) {
        sim.deadlock = true;
        sim.message = fmt::format("rank {} waits forever at {}", r, to_string({lists[r][next[r]]}, chunks));
        return sim;
      }
    for (double t : free_at) sim.makespan = std::max(sim.makespan, t);
    sim.finish = free_at;
    for (double b : busy) sim.bubble.push_back(sim.makespan > 0 ? 1.0 - b / sim.makespan : 0.0);
    return sim;
  }
};

}  // namespace

Simulation simulate(const std::vector<std::vector<Action>>& per_rank, int chunks, double tf, double tb) {
  const size_t S = per_rank.size() * static_cast<size_t>(chunks);
  StageCosts c;
  c.fwd.assign(S, tf), c.bwd.assign(S, tb), c.send_fwd.assign(S, 0.0), c.send_bwd.assign(S, 0.0);
  return simulate(per_rank, chunks, c);
}

// Each rank runs its list in order as far as its inputs have arrived; rounds over all ranks until
// none can go on. What is left then waits forever.
Simulation simulate(const std::vector<std::vector<Action>>& per_rank, int chunks, const StageCosts& c) {
  Sim s(per_rank, chunks, c);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < per_rank.size(); ++r)
      for (std::optional<double> t = s.ready(r); t; t = s.ready(r)) s.run(r, *t), progress = true;
  }
  return s.result(chunks);
}

}  // namespace slm::parallel::pipeline
