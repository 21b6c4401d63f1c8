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
enum Phase { kIdle, kCpu, kWait };
struct Lane {  // one pipeline rank of one replica
  int rep = 0, rank = 0;
  size_t next = 0;  // index of its next (or current) action
  Phase phase = kIdle;
  double cpu_left = 0, wait_left = 0, finish = 0, busy = 0;
  std::vector<double> started;  // each action's start (it posts the receive of the action K later)
};
}  // namespace

SharedSimulation simulate_sharing(const std::vector<std::vector<Action>>& per_rank, int chunks,
                                  const std::vector<SharedReplica>& replicas, const std::vector<SharedPool>& pools) {
  const int P = static_cast<int>(per_rank.size()), S = P * chunks, R = static_cast<int>(replicas.size());
  int M = 0;
  for (const auto& list : per_rank)
    for (const Action& a : list) M = std::max(M, a.micro + 1);
  const size_t per_rep = static_cast<size_t>(M) * static_cast<size_t>(S);
  // done[op][rep * M * S + micro * S + stage]: when that action ended (-1: not yet).
  std::vector<double> done[2] = {std::vector<double>(per_rep * R, -1.0), std::vector<double>(per_rep * R, -1.0)};
  std::vector<Lane> lanes;
  for (int rep = 0; rep < R; ++rep)
    for (int r = 0; r < P; ++r) {
      Lane l;
      l.rep = rep, l.rank = r;
      lanes.push_back(l);
    }
  constexpr double kInf = std::numeric_limits<double>::infinity();

  // When the input of lane l's next action is there (kInf: its sender has not finished).
  auto input_at = [&](const Lane& l) {
    const Action& a = per_rank[static_cast<size_t>(l.rank)][l.next];
    const SharedReplica& rp = replicas[static_cast<size_t>(l.rep)];
    const int vs = a.chunk * P + l.rank;
    const bool fwd = a.op == Action::F;
    // The first forward's input is the data, the last backward's the loss: there once the rank begins.
    const double begin = rp.time.start.empty() ? 0.0 : rp.time.start[static_cast<size_t>(l.rank)];
    if (fwd ? vs == 0 : vs == S - 1) return l.next == 0 ? begin : 0.0;
    const int from = fwd ? vs - 1 : vs + 1;
    const double end = done[fwd ? 0 : 1][static_cast<size_t>(l.rep) * per_rep + static_cast<size_t>(a.micro) * S + from];
    if (end < 0) return kInf;
    const auto& t = rp.time;
    const double send = fwd ? t.send_fwd[static_cast<size_t>(from)] : t.send_bwd[static_cast<size_t>(from)];
    if (t.notice_fwd.empty()) return std::max(begin, end + send);
    const double notice = fwd ? t.notice_fwd[static_cast<size_t>(from)] : t.notice_bwd[static_cast<size_t>(from)];
    const size_t ahead = static_cast<size_t>(std::max(1, t.receives_ahead));
    const double posted = l.next < ahead ? begin : l.started[l.next - ahead];
    return std::max(end, posted + notice) + send;  // Gloo's rendezvous (schedule.h, StageCosts)
  };

  SharedSimulation sim;
  sim.finish.assign(static_cast<size_t>(R), std::vector<double>(static_cast<size_t>(P), 0));
  sim.busy = sim.finish;
  std::vector<double> computing(pools.size()), rate(lanes.size(), 1.0);  // per pool; per computing lane
  for (double now = 0;;) {
    // Start every idle lane whose input is here; note the next arrival of those still waiting.
    double next_event = kInf;
    bool left = false;
    for (Lane& l : lanes) {
      const auto& list = per_rank[static_cast<size_t>(l.rank)];
      if (l.next >= list.size()) continue;
      left = true;
      if (l.phase != kIdle) continue;
      const double at = input_at(l);
      if (at > now) {
        next_event = std::min(next_event, at);
        continue;
      }
      const Action& a = list[l.next];
      const size_t k = static_cast<size_t>(a.chunk * P + l.rank);
      const SharedReplica& rp = replicas[static_cast<size_t>(l.rep)];
      const double total = a.op == Action::F ? rp.time.fwd[k] : rp.time.bwd[k];
      const double cpu = std::min(total, a.op == Action::F ? rp.cpu_fwd[k] : rp.cpu_bwd[k]);
      l.phase = kCpu, l.cpu_left = cpu, l.wait_left = total - cpu;
      l.started.push_back(now);
    }
    if (!left) break;
    // Each pool's computing ranks set everyone's rate there.
    std::fill(computing.begin(), computing.end(), 0.0);
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
    for (size_t i = 0; i < lanes.size(); ++i) {
      if (lanes[i].phase == kCpu) next_event = std::min(next_event, now + lanes[i].cpu_left / rate[i]);
      if (lanes[i].phase == kWait) next_event = std::min(next_event, now + lanes[i].wait_left);
    }
    if (next_event == kInf) {  // nothing runs and nothing arrives: a lane waits forever
      for (const Lane& l : lanes)
        if (l.next < per_rank[static_cast<size_t>(l.rank)].size()) {
          sim.deadlock = true;
          sim.message = fmt::format("replica {} rank {} waits forever at {}", l.rep, l.rank,
                                    parallel::pipeline::to_string({per_rank[static_cast<size_t>(l.rank)][l.next]}, chunks));
          return sim;
        }
    }
    const double dt = next_event - now, eps = 1e-12 * std::max(1.0, next_event);
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
      const Action& a = per_rank[static_cast<size_t>(l.rank)][l.next];
      done[a.op == Action::F ? 0 : 1][static_cast<size_t>(l.rep) * per_rep + static_cast<size_t>(a.micro) * S +
                                      static_cast<size_t>(a.chunk * P + l.rank)] = next_event;
      l.finish = next_event, l.phase = kIdle, ++l.next;
    }
    now = next_event;
  }
  for (const Lane& l : lanes) {
    sim.finish[static_cast<size_t>(l.rep)][static_cast<size_t>(l.rank)] = l.finish;
    sim.busy[static_cast<size_t>(l.rep)][static_cast<size_t>(l.rank)] = l.busy;
    sim.makespan = std::max(sim.makespan, l.finish);
  }
  return sim;
}

}  // namespace slm::planner
