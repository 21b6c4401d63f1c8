// comm/env.cpp: see env.h.
#include "comm/env.h"

#include <cstdlib>
#include <fmt/format.h>

#include "util/error.h"

namespace slm::comm {
namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int to_int(const char* name, const char* text, int lo) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || end == text || v < lo || v > 1 << 30)
    throw UserError(fmt::format("environment: {}={} is not an integer >= {}", name, text, lo));
  return static_cast<int>(v);
}

// Fills rank/world/local_* from one launcher's variable names; false if its rank variable is unset.
bool read_family(LaunchEnv& e, const char* source, const char* rank, const char* world,
                 const char* local_rank, const char* local_world) {
  if (!get(rank)) return false;
  if (!get(world)) throw UserError(fmt::format("environment: {} is set but {} is not", rank, world));
  e.source = source;
  e.rank = to_int(rank, get(rank), 0);
  e.world = to_int(world, get(world), 1);
  e.local_rank = get(local_rank) ? to_int(local_rank, get(local_rank), 0) : e.rank;
  e.local_world = get(local_world) ? to_int(local_world, get(local_world), 1) : e.world;
  if (e.rank >= e.world)
    throw UserError(fmt::format("environment: {}={} is not below {}={}", rank, e.rank, world, e.world));
  if (e.local_rank >= e.local_world)
    throw UserError(fmt::format("environment: {}={} is not below the local world size {}", local_rank,
                                e.local_rank, e.local_world));
  return true;
}

}  // namespace

LaunchEnv read_launch_env() {
  LaunchEnv e;
  // Slurm's SLURM_NTASKS_PER_NODE can read "2(x3)"; its leading number is the count per node.
  bool found = read_family(e, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE") ||
               read_family(e, "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!found && get("SLURM_PROCID") && get("SLURM_NTASKS")) {
    std::string per_node = get("SLURM_NTASKS_PER_NODE") ? get("SLURM_NTASKS_PER_NODE") : "";
    per_node = per_node.substr(0, per_node.find('('));
    if (!per_node.empty()) ::setenv("SLM_SLURM_LOCAL_WORLD", per_node.c_str(), 1);
    read_family(e, "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLM_SLURM_LOCAL_WORLD");
  }
  // Restarts: `slm launch --max-restarts` sets SLM_RESTART_*, torchrun --max-restarts its own count.
  if (const char* r = get("SLM_RESTART_COUNT")) e.restart = to_int("SLM_RESTART_COUNT", r, 0);
  else if (const char* t = get("TORCHELASTIC_RESTART_COUNT")) e.restart = to_int("TORCHELASTIC_RESTART_COUNT", t, 0);
  if (e.restart > 0) e.restart_cause = get("SLM_RESTART_CAUSE") ? get("SLM_RESTART_CAUSE") : "a rank failed";
  if (e.world == 1) return e;
  const char* addr = get("MASTER_ADDR");
  const char* port = get("MASTER_PORT");
  if (!addr || !port)
    throw UserError(fmt::format("environment: {} ranks ({}) need MASTER_ADDR and MASTER_PORT (the "
                                "host and port of rank 0's rendezvous store)",
                                e.world, e.source));
  e.master_addr = addr;
  e.master_port = to_int("MASTER_PORT", port, 1);
  if (e.master_port > 65535) throw UserError(fmt::format("environment: MASTER_PORT={} is not a port", port));
  return e;
}

}  // namespace slm::comm
