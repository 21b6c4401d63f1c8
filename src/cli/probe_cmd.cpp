// cli/probe_cmd.cpp: `slm probe`: measure the links between the ranks of a job (comm/probe.h);
// run it under a launcher (`slm launch`, `slm testbed run`, torchrun, Slurm, mpirun). Rank 0
// prints the matrix and writes the topology file.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/checks.h"
#include "cli/commands.h"
#include "comm/hierarchy.h"
#include "comm/probe.h"
#include "comm/world.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::cli {

void add_probe_command(CLI::App& app) {
  struct Args {
    comm::ProbeConfig probe;
    comm::DistConfig dist;
    std::string out = "topology.json";
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("probe", "measure latency and bandwidth between every pair of ranks; writes a "
                                          "topology file (run under a launcher)");
  cmd->add_option("--sizes", a->probe.sizes, "message sizes in bytes")->capture_default_str()->delimiter(',');
  cmd->add_option("--repeats", a->probe.repeats, "round trips per size (the fastest counts)")->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--pairs-at-once", a->probe.pairs_at_once,
                  "rank pairs timed at the same time (0 = auto: 1 up to 16 ranks, ranks/16 above; pairs that "
                  "cross one link at once each see a part of its rate)")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  cmd->add_option("-o,--out", a->out, "topology file (JSON) written by rank 0")->capture_default_str();
  cmd->add_flag("!--no-collectives", a->probe.collectives, "skip the all-reduce / all-gather timings on the world");
  cmd->add_option("--allreduce-mb", a->probe.allreduce_mb,
                  "also time all-reduces of these sizes (MiB) through the WAN options below, as training "
                  "reduces gradients")->delimiter(',');
  cmd->add_option("--ranks-per-site", a->dist.wan.ranks_per_site, "as dist.ranks_per_site (hierarchical)")->check(at_least(0));
  cmd->add_option("--channels", a->dist.wan.channels, "as dist.channels (0 = from --topology, else 1)")->check(at_least(0));
  cmd->add_option("--chunk-mb", a->dist.wan.chunk_mb, "as dist.chunk_mb (0 = auto)")->check(at_least(0));
  cmd->add_flag("--compress", a->dist.wan.compress, "as dist.compress (bf16 across sites)");
  cmd->add_option("--topology", a->dist.wan.topology, "as dist.topology (an earlier probe's file)");
  cmd->add_option("--timeout", a->dist.timeout_s, "seconds before a silent peer counts as lost")->capture_default_str()->check(above(0));
  cmd->callback([a] {
    for (int64_t s : a->probe.sizes)
      if (s < 4 || s > (int64_t{1} << 32)) throw UserError("probe: --sizes must be from 4 bytes to 4294967296 (4 GiB)");
    if (a->probe.sizes.size() < 2) throw UserError("probe: give at least two --sizes (the fit needs them)");
    comm::validate(a->dist.wan);
    for (double mb : a->probe.allreduce_mb)
      if (!(mb > 0 && mb <= kMaxMiB))
        throw UserError(fmt::format("probe: --allreduce-mb sizes must be above 0 and at most {}", kMaxMiB));
    comm::World w = comm::init_world(a->dist, "cpu");
    a->probe.wan = a->dist.wan;
    comm::ProbeResult r = comm::probe_links(w, a->probe);
    if (w.world.rank != 0) return;
    write_file_atomic(a->out, comm::probe_json(r));
    std::printf("%s", comm::probe_matrix(r).c_str());
    std::printf("topology: %s\n", a->out.c_str());
  });
}

}  // namespace slm::cli
