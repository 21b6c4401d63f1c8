// parallel/pipeline/schedule.cpp: see schedule.h.
#include "parallel/pipeline/schedule.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "util/error.h"

namespace slm::parallel::pipeline {

void validate_schedule(const std::string& name, int ranks, int micro, int chunks) {
  if (name != "none" && name != "gpipe" && name != "1f1b" && name != "interleaved")
    throw UserError(fmt::format("parallel: schedule '{}' is not none, gpipe, 1f1b or interleaved", name));
  if (micro < 1) throw UserError(fmt::format("parallel: micro_batches {} must be >= 1", micro));
  if (name == "none" && ranks > 1) throw UserError("parallel: schedule 'none' needs pp = 1 (use gpipe or 1f1b)");
  if (name != "interleaved" && chunks != 1)
    throw UserError(fmt::format("parallel: virtual_stages {} needs schedule = \"interleaved\"", chunks));
  if (name == "interleaved") {
    if (ranks < 2 || chunks < 2)
      throw UserError(fmt::format("parallel: interleaved needs pp >= 2 and virtual_stages >= 2 (got {} and {})",
                                  ranks, chunks));
    if (micro % ranks != 0)
      throw UserError(fmt::format("parallel: interleaved needs micro_batches ({}) to be a multiple of pp ({})",
                                  micro, ranks));
  }
}

static std::vector<Action> one_f_one_b(int warmup, int total, Action (*fwd)(int, int, int),
                                       Action (*bwd)(int, int, int), int P, int v) {
  std::vector<Action> out;
  warmup = std::min(warmup, total);
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k, P, v));
  for (int k = 0; k + warmup < total; ++k) out.push_back(fwd(k + warmup, P, v)), out.push_back(bwd(k, P, v));
  for (int k = std::max(0, total - warmup); k < total; ++k) out.push_back(bwd(k, P, v));
  return out;
}

// The k-th forward / backward of a rank. Without interleaving k is the micro-batch.
static Action plain_f(int k, int, int) { return {Action::F, k, 0}; }
static Action plain_b(int k, int, int) { return {Action::B, k, 0}; }
static Action inter_f(int k, int P, int v) { return {Action::F, (k / (P * v)) * P + k % P, (k / P) % v}; }
static Action inter_b(int k, int P, int v) { return {Action::B, (k / (P * v)) * P + k % P, v - 1 - (k / P) % v}; }

std::vector<Action> schedule_actions(const std::string& name, int ranks, int rank, int micro, int chunks) {
  validate_schedule(name, ranks, micro, chunks);
  if (name == "gpipe") {
    std::vector<Action> out;
    for (int m = 0; m < micro; ++m) out.push_back({Action::F, m, 0});
    for (int m = 0; m < micro; ++m) out.push_back({Action::B, m, 0});
    return out;
  }
  if (name == "1f1b" || name == "none") return one_f_one_b(ranks - rank - 1, micro, plain_f, plain_b, ranks, 1);
  return one_f_one_b((ranks - rank - 1) * 2 + (chunks - 1) * ranks, micro * chunks, inter_f, inter_b, ranks, chunks);
}

int max_in_flight(const std::string& name, int ranks, int rank, int micro, int chunks) {
  if (name == "gpipe") return micro;
  if (name == "1f1b" || name == "none") return std::min(ranks - rank, micro);
  return std::min((ranks - rank - 1) * 2 + (chunks - 1) * ranks + 1, micro * chunks);
}

std::string to_string(const std::vector<Action>& actions, int chunks) {
  std::string s;
  for (const Action& a : actions) {
    if (!s.empty()) s += ' ';
    s += fmt::format("{}{}", a.op == Action::F ? 'F' : 'B', a.micro);
    if (chunks > 1) s += fmt::format(".{}", a.chunk);
  }
  return s;
}

Simulation simulate(const std::vector<std::vector<Action>>& per_rank, int chunks, double tf, double tb) {
  const size_t S = per_rank.size() * static_cast<size_t>(chunks);
  StageCosts c;
  c.fwd.assign(S, tf), c.bwd.assign(S, tb), c.send_fwd.assign(S, 0.0), c.send_bwd.assign(S, 0.0);
  return simulate(per_rank, chunks, c);
}

Simulation simulate(const std::vector<std::vector<Action>>& per_rank, int chunks, const StageCosts& c) {
  const int P = static_cast<int>(per_rank.size()), S = P * chunks;
  int M = 0;
  for (const auto& list : per_rank)
    for (const Action& a : list) M = std::max(M, a.micro + 1);
  // arrive[op][micro * S + stage]: when that action's result is available where it is needed
  // (F: at the next stage, B: at the previous one, after the transfer; 2: the forward's end on
  // its own rank, which its backward needs); -1 = not done yet.
  const size_t n = static_cast<size_t>(M) * static_cast<size_t>(S);
  std::vector<double> arrive[3] = {std::vector<double>(n, -1.0), std::vector<double>(n, -1.0),
                                   std::vector<double>(n, -1.0)};
  // sent[op][micro * S + stage]: when the sender finished it (-1 = not yet), for the rendezvous.
  std::vector<double> sent[2] = {std::vector<double>(n, -1.0), std::vector<double>(n, -1.0)};
  const bool rendezvous = !c.notice_fwd.empty();
  std::vector<size_t> next(static_cast<size_t>(P), 0);
  std::vector<double> free_at(static_cast<size_t>(P), 0), busy(static_cast<size_t>(P), 0);
  if (!c.start.empty()) free_at = c.start;
  std::vector<std::vector<double>> started(static_cast<size_t>(P));  // per rank: each action's start
  const size_t ahead = static_cast<size_t>(std::max(1, c.receives_ahead));
  std::vector<int> in_flight(static_cast<size_t>(P), 0);
  Simulation sim;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < P; ++r) {
      auto& i = next[static_cast<size_t>(r)];
      while (i < per_rank[static_cast<size_t>(r)].size()) {
        const Action& a = per_rank[static_cast<size_t>(r)][i];
        const int vs = a.chunk * P + r;
        double ready = free_at[static_cast<size_t>(r)];
        const double begin = c.start.empty() ? 0.0 : c.start[static_cast<size_t>(r)];
        const double posted = i < ahead ? begin : started[static_cast<size_t>(r)][i - ahead];  // this receive's
        auto need = [&](int op, int stage) {
          const size_t m = static_cast<size_t>(a.micro) * static_cast<size_t>(S) + static_cast<size_t>(stage);
          double t = arrive[op][m];
          if (t < 0) return false;
          if (rendezvous && op != 2) {  // the message left once this rank's notice reached the sender
            const size_t from = static_cast<size_t>(stage);
            const double notice = op == Action::F ? c.notice_fwd[from] : c.notice_bwd[from];
            const double send = op == Action::F ? c.send_fwd[from] : c.send_bwd[from];
            t = std::max(sent[op][m], posted + notice) + send;
          }
          ready = std::max(ready, t);
          return true;
        };
        // A backward needs the stage's own forward (done: local) and the next stage's backward.
        bool ok = a.op == Action::F ? (vs == 0 || need(Action::F, vs - 1))
                                    : need(2, vs) && (vs == S - 1 || need(Action::B, vs + 1));
        if (!ok) break;
        const size_t k = static_cast<size_t>(vs);
        const double cost = a.op == Action::F ? c.fwd[k] : c.bwd[k];
        const double end = ready + cost;
        free_at[static_cast<size_t>(r)] = end;
        busy[static_cast<size_t>(r)] += cost;
        const double send = a.op == Action::F ? c.send_fwd[k] : c.send_bwd[k];
        arrive[a.op][static_cast<size_t>(a.micro) * static_cast<size_t>(S) + k] = end + send;
        sent[a.op][static_cast<size_t>(a.micro) * static_cast<size_t>(S) + k] = end;
        started[static_cast<size_t>(r)].push_back(ready);  // posts the receive of action i + ahead
        if (a.op == Action::F) arrive[2][static_cast<size_t>(a.micro) * static_cast<size_t>(S) + k] = end;
        in_flight[static_cast<size_t>(r)] += a.op == Action::F ? 1 : -1;
        sim.max_in_flight = std::max(sim.max_in_flight, in_flight[static_cast<size_t>(r)]);
        ++i, progress = true;
      }
    }
  }
  for (int r = 0; r < P; ++r)
    if (next[static_cast<size_t>(r)] < per_rank[static_cast<size_t>(r)].size()) {
      const Action& a = per_rank[static_cast<size_t>(r)][next[static_cast<size_t>(r)]];
      sim.deadlock = true;
      sim.message = fmt::format("rank {} waits forever at {}", r, to_string({a}, chunks));
      return sim;
    }
  for (double t : free_at) sim.makespan = std::max(sim.makespan, t);
  sim.finish = free_at;
  for (int r = 0; r < P; ++r)
    sim.bubble.push_back(sim.makespan > 0 ? 1.0 - busy[static_cast<size_t>(r)] / sim.makespan : 0.0);
  return sim;
}

double theoretical_bubble(int ranks, int micro, int chunks) {
  return (ranks - 1.0) / (static_cast<double>(chunks) * micro + ranks - 1.0);
}

}  // namespace slm::parallel::pipeline
