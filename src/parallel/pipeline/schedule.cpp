// parallel/pipeline/schedule.cpp: see schedule.h.
#include "parallel/pipeline/schedule.h"

#include <algorithm>
#include <fmt/format.h>

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

double theoretical_bubble(int ranks, int micro, int chunks) {
  return (ranks - 1.0) / (static_cast<double>(chunks) * micro + ranks - 1.0);
}

}  // namespace slm::parallel::pipeline
