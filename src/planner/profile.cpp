// planner/profile.cpp: see profile.h.
#include "planner/profile.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>

#include "planner/devices.h"
#include "util/error.h"
#include "util/stats.h"

namespace slm::planner {

std::string profile_to_json(const ComputeProfile& p) {
  nlohmann::json j;
  j["version"] = 1;
  j["shape"] = {{"n_embd", p.shape.n_embd},           {"n_head", p.shape.n_head},
                {"vocab_padded", p.shape.vocab_padded}, {"seq_len", p.shape.seq_len},
                {"precision", p.shape.precision}};
  j["ranks"] = nlohmann::json::array();
  for (const RankProfile& r : p.ranks)
    j["ranks"].push_back({{"device", r.device},           {"micro_batch", r.micro_batch},
                          {"block_fwd_s", r.block_fwd_s}, {"block_bwd_s", r.block_bwd_s},
                          {"embed_s", r.embed_s},         {"head_fwd_s", r.head_fwd_s},
                          {"head_bwd_s", r.head_bwd_s},   {"optim_s_per_param", r.optim_s_per_param},
                          {"overhead_bytes", r.overhead_bytes}, {"source", r.source}, {"runtime", r.runtime},
                          {"host", r.host}, {"host_ranks", r.host_ranks}, {"machine", r.machine},
                          {"shares_cores", r.shares_cores},
                          {"solo_speedup", r.solo_speedup}, {"block_scale", r.block_scale},
                          {"comm_cpu_s_per_byte", r.comm_cpu_s_per_byte}, {"alone_cores", r.alone_cores},
                          {"machine_extra_cpu_s_per_byte", r.machine_extra_cpu_s_per_byte},
                          {"tp2_fwd_s", r.tp2_fwd_s}, {"tp2_bwd_s", r.tp2_bwd_s}, {"tp2_alone_s", r.tp2_alone_s},
                          {"tp2_pipe_fwd_s", r.tp2_pipe_fwd_s}, {"tp2_pipe_bwd_s", r.tp2_pipe_bwd_s}});
  return j.dump(1) + "\n";
}

ComputeProfile parse_profile(const std::string& text, const std::string& where) {
  ComputeProfile p;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const auto& s = j.at("shape");
    p.shape = {s.at("n_embd").get<int64_t>(), s.at("n_head").get<int64_t>(), s.at("vocab_padded").get<int64_t>(),
               s.at("seq_len").get<int64_t>(), s.at("precision").get<std::string>()};
    for (const auto& r : j.at("ranks")) {
      RankProfile rp;
      rp.device = r.at("device").get<std::string>();
      rp.micro_batch = r.at("micro_batch").get<std::vector<int64_t>>();
      rp.block_fwd_s = r.at("block_fwd_s").get<std::vector<double>>();
      rp.block_bwd_s = r.at("block_bwd_s").get<std::vector<double>>();
      rp.embed_s = r.at("embed_s").get<std::vector<double>>();
      rp.head_fwd_s = r.at("head_fwd_s").get<std::vector<double>>();
      rp.head_bwd_s = r.at("head_bwd_s").get<std::vector<double>>();
      rp.optim_s_per_param = r.at("optim_s_per_param").get<double>();
      rp.overhead_bytes = r.value("overhead_bytes", 0.0);
      rp.source = r.value("source", std::string("measured"));
      rp.runtime = r.value("runtime", std::string());
      rp.host = r.value("host", 0);
      rp.host_ranks = r.value("host_ranks", 1);
      rp.machine = r.value("machine", -1);
      rp.shares_cores = r.value("shares_cores", false);
      rp.solo_speedup = r.value("solo_speedup", 1.0);
      rp.block_scale = r.value("block_scale", 1.0);
      rp.comm_cpu_s_per_byte = r.value("comm_cpu_s_per_byte", 0.0);
      rp.alone_cores = r.value("alone_cores", 1.0);
      rp.machine_extra_cpu_s_per_byte = r.value("machine_extra_cpu_s_per_byte", 0.0);
      rp.tp2_fwd_s = r.value("tp2_fwd_s", std::vector<double>{});
      rp.tp2_bwd_s = r.value("tp2_bwd_s", std::vector<double>{});
      rp.tp2_alone_s = r.value("tp2_alone_s", std::vector<double>{});
      rp.tp2_pipe_fwd_s = r.value("tp2_pipe_fwd_s", std::vector<double>{});
      rp.tp2_pipe_bwd_s = r.value("tp2_pipe_bwd_s", std::vector<double>{});
      if (rp.solo_speedup < 1 || rp.host_ranks < 1 || rp.block_scale <= 0 || rp.comm_cpu_s_per_byte < 0 ||
          rp.machine_extra_cpu_s_per_byte < 0 || !(rp.alone_cores > 0 && rp.alone_cores <= 1))
        throw UserError(fmt::format("{}: rank {}: solo_speedup must be >= 1, host_ranks >= 1, block_scale > 0, "
                                    "comm_cpu_s_per_byte and machine_extra_cpu_s_per_byte >= 0 and alone_cores in "
                                    "(0, 1]", where, p.ranks.size()));
      const size_t n = rp.micro_batch.size();
      for (const auto* v : {&rp.block_fwd_s, &rp.block_bwd_s, &rp.embed_s, &rp.head_fwd_s, &rp.head_bwd_s})
        if (v->size() != n) throw UserError(fmt::format("{}: rank {}: one time per micro-batch size expected", where, p.ranks.size()));
      for (const auto* v : {&rp.tp2_fwd_s, &rp.tp2_bwd_s, &rp.tp2_alone_s, &rp.tp2_pipe_fwd_s, &rp.tp2_pipe_bwd_s})
        if (!v->empty() && (v->size() != n || rp.tp2_fwd_s.size() != n || *std::min_element(v->begin(), v->end()) <= 0))
          throw UserError(fmt::format("{}: rank {}: tp2_alone_s and tp2_pipe_* need tp2_fwd_s, and each tp2_* list one "
                                      "positive time per micro-batch size (or none)", where, p.ranks.size()));
      if (rp.tp2_bwd_s.size() != rp.tp2_fwd_s.size() || rp.tp2_pipe_bwd_s.size() != rp.tp2_pipe_fwd_s.size())
        throw UserError(fmt::format("{}: rank {}: tp2_fwd_s and tp2_bwd_s go together, as tp2_pipe_fwd_s and tp2_pipe_bwd_s",
                                    where, p.ranks.size()));
      if (n == 0 || !std::is_sorted(rp.micro_batch.begin(), rp.micro_batch.end()) || rp.micro_batch[0] < 1)
        throw UserError(fmt::format("{}: rank {}: micro_batch must be ascending sizes >= 1", where, p.ranks.size()));
      p.ranks.push_back(rp);
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a profile of `slm profile` ({})", where, e.what()));
  }
  if (p.ranks.empty()) throw UserError(where + ": the profile has no ranks");
  settle_shared_pools(p.ranks);
  pool_compute(p.ranks);
  return p;
}

void pool_compute(std::vector<RankProfile>& ranks) {
  std::map<std::tuple<int, std::string, std::vector<int64_t>>, std::vector<RankProfile*>> alike;
  for (RankProfile& r : ranks)
    if (r.shares_cores && r.source != "device table") alike[{r.host, r.device, r.micro_batch}].push_back(&r);
  for (auto& [key, members] : alike) {
    if (members.size() < 2) continue;
    const double n = static_cast<double>(members.size());
    RankProfile mean = *members[0];
    mean.block_scale = 0, mean.optim_s_per_param = 0;
    for (auto* v : {&mean.block_fwd_s, &mean.block_bwd_s, &mean.embed_s, &mean.head_fwd_s, &mean.head_bwd_s})
      v->assign(v->size(), 0.0);
    for (const RankProfile* r : members) {
      mean.block_scale += r->block_scale / n, mean.optim_s_per_param += r->optim_s_per_param / n;
      for (size_t k = 0; k < mean.micro_batch.size(); ++k) {
        mean.block_fwd_s[k] += r->block_scale * r->block_fwd_s[k] / n;  // blocks in a row: scale x time
        mean.block_bwd_s[k] += r->block_scale * r->block_bwd_s[k] / n;
        mean.embed_s[k] += r->embed_s[k] / n;
        mean.head_fwd_s[k] += r->head_fwd_s[k] / n, mean.head_bwd_s[k] += r->head_bwd_s[k] / n;
      }
    }
    for (size_t k = 0; k < mean.micro_batch.size(); ++k)
      mean.block_fwd_s[k] /= mean.block_scale, mean.block_bwd_s[k] /= mean.block_scale;
    for (RankProfile* r : members) {
      r->block_fwd_s = mean.block_fwd_s, r->block_bwd_s = mean.block_bwd_s, r->embed_s = mean.embed_s;
      r->head_fwd_s = mean.head_fwd_s, r->head_bwd_s = mean.head_bwd_s;
      r->block_scale = mean.block_scale, r->optim_s_per_param = mean.optim_s_per_param;
    }
  }
}

void settle_shared_pools(std::vector<RankProfile>& ranks) {
  std::map<int, std::pair<double, int>> pools;  // host -> sum of solo speed-ups, ranks
  for (const RankProfile& r : ranks) pools[r.host].first += r.solo_speedup, ++pools[r.host].second;
  for (RankProfile& r : ranks) {
    const auto [sum, n] = pools[r.host];
    r.shares_cores = r.host_ranks > 1 && sum / n > kSharesCoresSpeedup;
  }
}

void check_profile(const ComputeProfile& p, const ProfileShape& w, int world, const std::string& where) {
  const ProfileShape& h = p.shape;
  if (!(h == w))
    throw UserError(fmt::format("{} was measured for n_embd {}, n_head {}, vocabulary {}, seq_len {}, {}; this run "
                                "has n_embd {}, n_head {}, vocabulary {}, seq_len {}, {} (run `slm profile` again)",
                                where, h.n_embd, h.n_head, h.vocab_padded, h.seq_len, h.precision, w.n_embd,
                                w.n_head, w.vocab_padded, w.seq_len, w.precision));
  if (static_cast<int>(p.ranks.size()) != world)
    throw UserError(fmt::format("{} has {} ranks, the cluster has {}", where, p.ranks.size(), world));
}

double at_batch(const std::vector<int64_t>& sizes, const std::vector<double>& t, double b) {
  const size_t n = sizes.size();
  if (b <= static_cast<double>(sizes[0])) return t[0] / static_cast<double>(sizes[0]) * b;
  if (b >= static_cast<double>(sizes[n - 1])) return t[n - 1] / static_cast<double>(sizes[n - 1]) * b;
  size_t i = 1;
  while (static_cast<double>(sizes[i]) < b) ++i;
  const double x0 = static_cast<double>(sizes[i - 1]), x1 = static_cast<double>(sizes[i]);
  return t[i - 1] + (t[i] - t[i - 1]) * (b - x0) / (x1 - x0);
}

std::vector<double> line_fit(const std::vector<int64_t>& sizes, const std::vector<double>& t) {
  if (sizes.size() < 3 || t.size() != sizes.size()) return t;
  const Line fit = least_squares_line(sizes, t);
  std::vector<double> out;
  for (int64_t b : sizes) {
    out.push_back(fit.intercept + fit.slope * static_cast<double>(b));
    if (out.back() <= 0) return t;
  }
  return out;
}

ComputeProfile profile_from_devices(const Cluster& c, const ProfileShape& s, double cpu_peak_flops,
                                    const std::vector<int64_t>& sizes) {
  ComputeProfile p;
  p.shape = s;
  const double C = static_cast<double>(s.n_embd), T = static_cast<double>(s.seq_len), V = static_cast<double>(s.vocab_padded);
  for (const RankSpec& r : c.ranks) {
    DeviceSpec d = *find_device(r.device);
    if (d.name == "cpu") d.fp32_tflops = d.bf16_tflops = cpu_peak_flops * (r.cores > 0 ? r.cores : 1) / 1e12;
    RankProfile rp;
    rp.device = d.name + " (device table)";
    rp.source = "device table";
    rp.micro_batch = sizes;
    for (int64_t b64 : sizes) {
      const double b = static_cast<double>(b64), flops = achieved_flops(d, s.precision, b * T);
      const double block = (24 * b * T * C * C + 4 * b * T * T * C) / flops;
      const double head = 2 * b * T * C * V / flops;
      rp.block_fwd_s.push_back(block);
      rp.block_bwd_s.push_back(2 * block);
      rp.embed_s.push_back(3 * b * T * C * 4 / (d.memory_bw_GBps * 1e9));  // gathers and scatters rows
      rp.head_fwd_s.push_back(head);
      rp.head_bwd_s.push_back(2 * head);
    }
    rp.optim_s_per_param = 28 / (d.memory_bw_GBps * 1e9);
    rp.overhead_bytes = d.overhead_gb * (1 << 30);
    p.ranks.push_back(rp);
  }
  return p;
}

}  // namespace slm::planner
