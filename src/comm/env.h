// comm/env.h: where this process sits in a distributed job, read from the environment.
// Owns: LaunchEnv and read_launch_env. Understands the variables of three launchers, first match
// wins: torchrun and `slm launch` (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), Slurm's srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE) and Open MPI's mpirun
// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE). The rendezvous address always comes
// from MASTER_ADDR / MASTER_PORT. No variables at all = one process (world size 1). A restarted
// job: SLM_RESTART_COUNT / SLM_RESTART_CAUSE (slm launch) or TORCHELASTIC_RESTART_COUNT (torchrun).
// No torch, no sockets: parsing only.
#pragma once
#include <string>

namespace slm::comm {

struct LaunchEnv {
  int rank = 0, world = 1;              // global rank and number of processes
  int local_rank = 0, local_world = 1;  // on this machine
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "none";  // "torchrun" | "slurm" | "mpirun" | "none"
  int restart = 0;                // how many times the launcher restarted the job (0 = first start)
  std::string restart_cause;      // why it did, when known ("rank 1 was killed by signal 9")
};

// UserError (one line, naming the variable) on malformed or inconsistent values, and when
// world > 1 but MASTER_ADDR / MASTER_PORT are missing.
LaunchEnv read_launch_env();

}  // namespace slm::comm
