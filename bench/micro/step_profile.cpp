// bench/micro/step_profile.cpp: where a training step's forward and backward time goes, by ATen
// operator. Runs the model's forward + loss + backward over the step's micro-batches (as slm train
// does: one autocast region per step, so weights are cast once; in the given precision) a few
// times, then once under LibTorch's legacy profiler, and prints each operator's self time (its
// time less its children's), largest first. SLM_PROFILE_OP=aten::copy_ also prints that
// operator's time by the chain of operators it is called from. Run with slm's environment
// (OMP_WAIT_POLICY=PASSIVE, ATEN_CPU_CAPABILITY=avx512 where the CPU has it, GLIBC_TUNABLES as
// bench/compare/train_compare.sh sets).
// Usage: bench_step_profile [L=4] [C=256] [H=4] [T=256] [V=4096] [B=8] [precision=bf16] [top=25] [micro-batches=2]
#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model/gpt2.h"
#include "model/autocast.h"

using namespace slm;

int main(int argc, char** argv) {
  auto arg = [&](int i, int64_t d) { return argc > i ? std::atoll(argv[i]) : d; };
  model::GPT2Config c;
  c.n_layer = arg(1, 4), c.n_embd = arg(2, 256), c.n_head = arg(3, 4), c.block_size = arg(4, 256);
  c.vocab_size = arg(5, 4096);
  const int64_t B = arg(6, 8);
  const std::string prec = argc > 7 ? argv[7] : "bf16";
  const size_t top = static_cast<size_t>(arg(8, 25));
  const int64_t micro_batches = arg(9, 2);
  at::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));  // as slm does
  model::GPT2 m = model::init_gpt2(c, 1);
  const at::Tensor idx = torch::randint(c.vocab_size, {B, c.block_size}, torch::kLong);
  const at::Tensor tgt = torch::randint(c.vocab_size, {B, c.block_size}, torch::kLong);
  auto step = [&] {  // one step's forward and backward
    model::AutocastGuard autocast(prec, "cpu");
    for (int64_t i = 0; i < micro_batches; ++i) model::forward_loss(m, idx, tgt, true).backward();
  };
  for (int i = 0; i < 3; ++i) step();  // warm: allocator, oneDNN primitives
  const auto t0 = std::chrono::steady_clock::now();
  step();
  const double plain_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::stringstream trace;
  {
    torch::autograd::profiler::RecordProfile guard(trace);
    step();
  }
  // Self time per operator name: the trace's complete events on the main thread, nested by time.
  const nlohmann::json events = nlohmann::json::parse(trace.str());
  struct Ev { double ts, dur; std::string name; };
  std::vector<Ev> ev;
  for (const auto& e : events)
    if (e.value("ph", "") == "X") ev.push_back({e["ts"].get<double>(), e["dur"].get<double>(), e["name"]});
  std::sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts || (a.ts == b.ts && a.dur > b.dur); });
  std::map<std::string, std::pair<double, int>> self;  // name -> (self us, calls)
  std::vector<size_t> open;                             // enclosing events
  std::vector<double> child(ev.size(), 0.0);
  std::vector<std::string> parent(ev.size());  // the enclosing events' names, outermost first
  for (size_t i = 0; i < ev.size(); ++i) {
    while (!open.empty() && ev[open.back()].ts + ev[open.back()].dur <= ev[i].ts) open.pop_back();
    if (!open.empty()) child[open.back()] += ev[i].dur;
    for (size_t o : open) parent[i] += (parent[i].empty() ? "" : " > ") + ev[o].name;
    open.push_back(i);
  }
  if (std::getenv("SLM_PROFILE_OP")) {  // where one operator is called from: its time by chain of callers
    std::map<std::string, std::pair<double, int>> by;
    for (size_t i = 0; i < ev.size(); ++i)
      if (ev[i].name == std::getenv("SLM_PROFILE_OP")) {
        auto& b = by[parent[i].empty() ? "(top)" : parent[i]];
        b.first += ev[i].dur - child[i], b.second += 1;
      }
    for (const auto& [p, b] : by)
      std::printf("  %s from %s: %.2f ms in %d calls\n", std::getenv("SLM_PROFILE_OP"), p.c_str(), b.first / 1e3, b.second);
  }
  double total = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    auto& s = self[ev[i].name];
    s.first += std::max(0.0, ev[i].dur - child[i]), s.second += 1;
    total += std::max(0.0, ev[i].dur - child[i]);
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [name, s] : self) rows.push_back({s.first, name});
  std::sort(rows.rbegin(), rows.rend());
  std::printf("L=%ld C=%ld H=%ld T=%ld V=%ld B=%ld x %ld micro-batches %s, %d threads: forward + backward %.1f ms "
              "(%.1f ms of operator self time under the profiler)\n",
              c.n_layer, c.n_embd, c.n_head, c.block_size, c.vocab_size, B, micro_batches, prec.c_str(),
              at::get_num_threads(), plain_ms, total / 1e3);
  for (size_t i = 0; i < std::min(top, rows.size()); ++i)
    std::printf("%8.2f ms %5.1f%% %5d x  %s\n", rows[i].first / 1e3, 100 * rows[i].first / total,
                self[rows[i].second].second, rows[i].second.c_str());
}
