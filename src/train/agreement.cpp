// train/agreement.cpp: see agreement.h.
#include "train/agreement.h"

#include <algorithm>
#include <cmath>

#include "host/hardware.h"

namespace slm::train {

ByteCounts byte_counts(const Trainer& t) {
  return {comm::bytes_sent(t.groups.pp), comm::bytes_sent(t.groups.tp), comm::bytes_sent(t.groups.dp),
          comm::bytes_sent(t.groups.outer)};
}

ByteCounts sent_since(const Trainer& t, const ByteCounts& before) {
  const ByteCounts now = byte_counts(t);
  return {now.pp - before.pp, now.tp - before.tp, now.dp - before.dp, now.outer - before.outer};
}

// The sum's layout: a header, then kPerStep numbers per step, then one peak memory per rank.
namespace {
constexpr size_t kHeader = 4, kPerStep = 10;
}

Agreement begin_agree(std::vector<LocalStep> steps, bool stop, bool save_due, const std::vector<double>& ckpt,
                      const comm::Group& world) {
  const auto n = static_cast<size_t>(world.size);
  std::vector<double> v = {stop ? 1.0 : 0.0, save_due ? 1.0 : 0.0, ckpt[0], ckpt[1]};
  for (const LocalStep& l : steps) {
    const StepStats& s = l.s;
    v.insert(v.end(), {s.loss, step_seconds(s), s.compute_s, s.schedule_s, l.wait_s, l.paced ? l.wait_s : 0.0,
                       static_cast<double>(l.sent.pp), static_cast<double>(l.sent.tp),
                       static_cast<double>(l.sent.dp), static_cast<double>(l.sent.outer)});
  }
  v.resize(v.size() + n, 0.0);
  v[v.size() - n + static_cast<size_t>(world.rank)] = static_cast<double>(host::peak_memory_bytes());
  return {comm::sum_async(v, world), std::move(steps), world.size};
}

Agreed finish_agree(Agreement& a) {
  const std::vector<double> v = a.sum.get();
  const double n = a.n;
  Agreed all{v[0] > 0, v[1] > 0, v[2], v[3], {}, std::vector<double>(v.end() - a.n, v.end())};
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const double* x = v.data() + kHeader + i * kPerStep;
    all.steps.push_back({x[0], x[1] / n, x[2] / n, x[3] / n, x[4] / n, x[5] / n, x[6], x[7], x[8], x[9]});
  }
  return all;
}

int64_t steps_per_agreement(int64_t block, double step_s, double paced_wait_s) {
  const double block_s = static_cast<double>(block) * step_s;
  if (paced_wait_s <= 0.05 * block_s) return block;
  if (step_s <= 0) return kMaxStepsPerAgreement;
  const double latency_s = block_s + paced_wait_s;  // from the block's start to its arrival
  const auto want = static_cast<int64_t>(std::ceil(1.25 * latency_s / step_s));
  return std::min(kMaxStepsPerAgreement, std::max(block + 1, want));
}

}  // namespace slm::train
