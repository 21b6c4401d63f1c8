// planner/core_sharing.cpp: see core_sharing.h. Time advances from event to event (an action's CPU
// work done, its wait done, a message arriving); between events every computing rank progresses at
// its pools' current rate.
#include "planner/core_sharing.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace slm::planner {

using parallel::pipeline::Action;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum Phase { kIdle, kCpu, kWait };
struct Lane {  // one pipeline rank of one replica
  int rep = 0, rank = 0;
  size_t next = 0;  // index of its next (or current) action
  Phase phase = kIdle;
  double cpu_left = 0, wait_left = 0, finish = 0, busy = 0;
  std::vector<double> started;  // each action's start (it posts the receive of the action K later)
};

// The run's state: every lane, when each action ended, and each computing lane's rate.
struct Sharing {
  const std::vector<std::vector<Action>>& per_rank;
  const std::vector<SharedReplica>& replicas;
  const std::vector<SharedPool>& pools;
  int P = 0, S = 0;  // pipeline ranks, virtual stages
  size_t per_rep = 0;
  std::vector<double> done[2];  // [op][rep * M * S + micro * S + stage]: when that action ended (-1: not yet)
  std::vector<Lane> lanes;
  std::vector<double> rate;  // per lane, while it computes

  const std::vector<Action>& list(const Lane& l) const { return per_rank[static_cast<size_t>(l.rank)]; }
  double& end_of(const Lane& l, const Action& a, int stage) {
    return done[a.op == Action::F ? 0 : 1][static_cast<size_t>(l.rep) * per_rep + static_cast<size_t>(a.micro) * S +
                                           static_cast<size_t>(stage)];
  }

  // When the input of lane l's next action is there (kInf: its sender has not finished).
  double input_at(const Lane& l) {
    const Action& a = list(l)[l.next];
    const SharedReplica& rp = replicas[static_cast<size_t>(l.rep)];
    const int vs = a.chunk * P + l.rank;
    const bool fwd = a.op == Action::F;
    // The first forward's input is the data, the last backward's the loss: there once the rank begins.
    const double begin = rp.time.start.empty() ? 0.0 : rp.time.start[static_cast<size_t>(l.rank)];
    if (fwd ? vs == 0 : vs == S - 1) return l.next == 0 ? begin : 0.0;
    const int from = fwd ? vs - 1 : vs + 1;
    const double end = end_of(l, a, from);
    if (end < 0) return kInf;
    const auto& t = rp.time;
    const double send = fwd ? t.send_fwd[static_cast<size_t>(from)] : t.send_bwd[static_cast<size_t>(from)];
    if (t.notice_fwd.empty()) return std::max(begin, end + send);
    const double notice = fwd ? t.notice_fwd[static_cast<size_t>(from)] : t.notice_bwd[static_cast<size_t>(from)];
    const size_t ahead = static_cast<size_t>(std::max(1, t.receives_ahead));
    const double posted = l.next < ahead ? begin : l.started[l.next - ahead];
    return std::max(end, posted + notice) + send;  // Gloo's rendezvous (schedule.h, StageCosts)
  }

  // Starts every idle lane whose input is here; returns the next arrival for those still waiting
  // (kInf: none). *left: whether any lane has actions left.
  double start_ready(double now, bool* left) {
    double arrival = kInf;
    *left = false;
    for (Lane& l : lanes) {
      if (l.next >= list(l).size()) continue;
      *left = true;
      if (l.phase != kIdle) continue;
      const double at = input_at(l);
      if (at > now) {
        arrival = std::min(arrival, at);
        continue;
      }
      const Action& a = list(l)[l.next];
      const size_t k = static_cast<size_t>(a.chunk * P + l.rank);
      const SharedReplica& rp = replicas[static_cast<size_t>(l.rep)];
      const double total = a.op == Action::F ? rp.time.fwd[k] : rp.time.bwd[k];
      const double cpu = std::min(total, a.op == Action::F ? rp.cpu_fwd[k] : rp.cpu_bwd[k]);
      l.phase = kCpu, l.cpu_left = cpu, l.wait_left = total - cpu;
      l.started.push_back(now);
    }
    return arrival;
  }

  // Each pool's computing ranks set the rate of everyone computing there.
  void set_rates() {
    std::vector<double> computing(pools.size(), 0.0);
    for (const Lane& l : lanes)
      if (l.phase == kCpu)
        for (const auto& [pool, n] : replicas[static_cast<size_t>(l.rep)].pools[static_cast<size_t>(l.rank)])
          computing[static_cast<size_t>(pool)] += n;
    for (size_t i = 0; i < lanes.size(); ++i) {
      const Lane& l = lanes[i];
      if (l.phase != kCpu) continue;
      double v = kInf;
      for (const auto& [pool, n] : replicas[static_cast<size_t>(l.rep)].pools[static_cast<size_t>(l.rank)]) {
        const SharedPool& sp = pools[static_cast<size_t>(pool)];
        v = std::min(v, std::clamp(sp.ranks / computing[static_cast<size_t>(pool)], 1.0, std::max(1.0, sp.speedup)));
      }
      rate[i] = v == kInf ? 1.0 : v;  // in no pool: the profile's speed
    }
  }

  // The next event after `now`: an arrival, or a lane's CPU work or wait done.
  double next_event(double now, double arrival) const {
    double next = arrival;
    for (size_t i = 0; i < lanes.size(); ++i) {
      if (lanes[i].phase == kCpu) next = std::min(next, now + lanes[i].cpu_left / rate[i]);
      if (lanes[i].phase == kWait) next = std::min(next, now + lanes[i].wait_left);
    }
    return next;
  }

  // Every busy lane progresses from `now` to `next`; the actions that end there are done.
  void advance(double now, double next) {
    const double dt = next - now, eps = 1e-12 * std::max(1.0, next);
    for (size_t i = 0; i < lanes.size(); ++i) {
      Lane& l = lanes[i];
      if (l.phase == kIdle) continue;
      l.busy += dt;
      if (l.phase == kCpu) {
        l.cpu_left -= dt * rate[i];
        if (l.cpu_left > eps) continue;
        l.phase = kWait;
      } else {
        l.wait_left -= dt;
      }
      if (l.wait_left > eps) continue;
      const Action& a = list(l)[l.next];
      end_of(l, a, a.chunk * P + l.rank) = next;
      l.finish = next, l.phase = kIdle, ++l.next;
    }
  }

  // The first lane with actions left, as a deadlock's message.
  std::string stuck(int chunks) const {
    for (const Lane& l : lanes)
      if (l.next < list(l).size())
        return fmt::format("replica {} rank {} waits forever at {}", l.rep, l.rank,
                           parallel::pipeline::to_string({list(l)[l.next]}, chunks));
    return "";
  }
};

}  // namespace

SharedSimulation simulate_sharing(const std::vector<std::vector<Action>>& per_rank, int chunks,
                                  const std::vector<SharedReplica>& replicas, const std::vector<SharedPool>& pools) {
  const int P = static_cast<int>(per_rank.size()), R = static_cast<int>(replicas.size());
  int M = 0;
  for (const auto& list : per_rank)
    for (const Action& a : list) M = std::max(M, a.micro + 1);
  const size_t per_rep = static_cast<size_t>(M) * static_cast<size_t>(P * chunks);
  Sharing x{per_rank, replicas, pools, P, P * chunks, per_rep, {}, {}, {}};
  x.done[0].assign(x.per_rep * R, -1.0), x.done[1].assign(x.per_rep * R, -1.0);
  for (int rep = 0; rep < R; ++rep)
    for (int r = 0; r < x.P; ++r) {
      Lane l;
      l.rep = rep, l.rank = r;
      x.lanes.push_back(l);
    }
  x.rate.assign(x.lanes.size(), 1.0);

  SharedSimulation sim;
  sim.finish.assign(static_cast<size_t>(R), std::vector<double>(static_cast<size_t>(x.P), 0));
  sim.busy = sim.finish;
  for (double now = 0;;) {
    bool left = false;
    const double arrival = x.start_ready(now, &left);
    if (!left) break;
    x.set_rates();
    const double next = x.next_event(now, arrival);
    if (next == kInf) {  // nothing runs and nothing arrives: a lane waits forever
      sim.deadlock = true;
      sim.message = x.stuck(chunks);
      return sim;
    }
    x.advance(now, next);
    now = next;
  }
  for (const Lane& l : x.lanes) {
    sim.finish[static_cast<size_t>(l.rep)][static_cast<size_t>(l.rank)] = l.finish;
    sim.busy[static_cast<size_t>(l.rep)][static_cast<size_t>(l.rank)] = l.busy;
    sim.makespan = std::max(sim.makespan, l.finish);
  }
  return sim;
}

}  // namespace slm::planner
