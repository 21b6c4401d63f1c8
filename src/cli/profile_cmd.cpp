// cli/profile_cmd.cpp: `slm profile`: every rank of a job times its compute for the planner
// (autoplan/profile.h): a transformer block forward and backward, embeddings, head + loss and the
// optimizer, at a few micro-batch sizes, on its own device and threads. Run it under the same
// launcher (or testbed) as training: ranks that share a machine or a CPU quota measure that too.
// Rank 0 writes the profile (JSON, planner/profile.h) and prints one line per rank.
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>

#include "autoplan/profile.h"
#include "cli/commands.h"
#include "comm/world.h"
#include "host/device.h"
#include "host/runtime.h"
#include "planner/profile.h"
#include "train/precision.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::cli {

void add_profile_command(CLI::App& app) {
  struct Args {
    std::string config, out = "profile.json";
    std::vector<std::string> set;
    std::vector<int64_t> sizes;
    int repeats = 3;
    bool no_cache = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("profile", "time every rank's compute for the planner; writes a profile (run under "
                                            "a launcher)");
  cmd->add_option("-c,--config", a->config, "training configuration (model, batch, system sections)");
  cmd->add_option("--set", a->set, "override one key, section.key=value (repeatable)");
  cmd->add_option("--micro-batches", a->sizes, "micro-batch sizes to time (default 1, 2, 4, 8 up to the batch)")
      ->delimiter(',');
  cmd->add_option("--repeats", a->repeats, "timed runs per size (the median counts)")->capture_default_str()
      ->check(CLI::Range(1, 50));
  cmd->add_flag("--no-cache", a->no_cache, "measure again even when ~/.cache/slmtrain/profile.json has it");
  cmd->add_option("-o,--out", a->out, "profile file (JSON) written by rank 0")->capture_default_str();
  cmd->callback([a] {
    train::Config cfg = model_config(a->config, a->set);
    model::validate(cfg.model);
    std::vector<int64_t> sizes = a->sizes;
    if (sizes.empty())
      for (int64_t b = 1; b <= std::min<int64_t>(cfg.batch.batch_size, 8); b *= 2) sizes.push_back(b);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (sizes.front() < 1 || sizes.back() > 1024) throw UserError("profile: --micro-batches must be 1..1024");
    const std::string device = host::resolve_device(cfg.system.device, cfg.dist.backend);
    const int64_t T = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
    comm::World w = comm::init_world(cfg.dist, device);
    host::configure_cpu_threads(cfg.system.threads, w.env.local_world);
    std::string why;
    const std::string precision =
        train::resolve_precision(cfg.system.precision, device, {cfg.model, sizes.back(), T}, &why);
    autoplan::ProfileRequest req{cfg.model, T, device, precision, sizes, a->repeats, !a->no_cache, w.env.local_world};
    planner::ComputeProfile p;
    p.shape = autoplan::profile_shape(cfg.model, T, precision);
    p.ranks = autoplan::profile_job(req, w);
    const planner::RankProfile& mine = p.ranks[static_cast<size_t>(w.world.rank)];
    if (w.world.rank != 0) return;
    write_file_atomic(a->out, planner::profile_to_json(p));
    std::printf("profile: %zu ranks, n_embd %lld, seq_len %lld, %s, micro-batches %s (%s; %s)\n", p.ranks.size(),
                static_cast<long long>(cfg.model.n_embd), static_cast<long long>(T), precision.c_str(),
                fmt::format("{}", fmt::join(sizes, ",")).c_str(), mine.source.c_str(), mine.runtime.c_str());
    for (size_t r = 0; r < p.ranks.size(); ++r) {
      const planner::RankProfile& q = p.ranks[r];
      const size_t k = q.micro_batch.size() - 1;
      std::string tp2;  // the pair's block split over tp 2, where the rank has a partner
      if (!q.tp2_fwd_s.empty())
        tp2 = fmt::format(", over tp 2 {:.2f} ms{}{}", 1e3 * (q.tp2_fwd_s[k] + q.tp2_bwd_s[k]),
                          q.tp2_pipe_fwd_s.empty() ? "" : fmt::format(" ({:.2f} as pipeline stages)", 1e3 * (q.tp2_pipe_fwd_s[k] + q.tp2_pipe_bwd_s[k])),
                          q.tp2_alone_s.empty() ? "" : fmt::format(" ({:.2f} alone)", 1e3 * q.tp2_alone_s[k]));
      std::printf("  rank %zu: block fwd+bwd %.2f ms at micro-batch %lld%s, head %.2f ms, AdamW %.2f ns/param, "
                  "runtime %.0f MiB, alone %.2fx faster%s, blocks in a row x%.2f, communication %.2f ns of CPU per "
                  "byte (+ %.2f its machine's beyond its ranks') (%s)\n",
                  r, 1e3 * (q.block_fwd_s[k] + q.block_bwd_s[k]), static_cast<long long>(q.micro_batch[k]), tp2.c_str(),
                  1e3 * (q.head_fwd_s[k] + q.head_bwd_s[k]), 1e9 * q.optim_s_per_param, q.overhead_bytes / (1 << 20),
                  q.solo_speedup, q.alone_cores < 1 ? fmt::format(" (on {:.2f} cores)", q.alone_cores).c_str() : "",
                  q.block_scale, 1e9 * q.comm_cpu_s_per_byte, 1e9 * q.machine_extra_cpu_s_per_byte, q.device.c_str());
    }
    std::printf("profile: %s\n", a->out.c_str());
  });
}

}  // namespace slm::cli
