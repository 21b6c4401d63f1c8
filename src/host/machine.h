// host/machine.h: the facts about this machine that `slm doctor` checks and `slm train`'s header
// states, read rather than guessed: the CPU (model, usable cores, the instruction sets that decide
// fp32/bf16 speed), memory, LibTorch (version, CUDA and NCCL compiled in, its BLAS) and the GPUs it sees.
// Owns: MachineFacts, machine_facts, CpuCount, cpu_count, describe_cpu, describe_machine. Measured speeds (GEMM peaks, the precision
// probe) are host/hardware.h's and host/precision_probe.h's.
#pragma once
#include <string>
#include <vector>

#include "host/blas_info.h"
#include "host/cuda_info.h"

namespace slm::host {

struct MachineFacts {
  std::string cpu;                        // model name, e.g. "AMD EPYC 7B13"
  int cores = 0;                          // logical CPUs this process may run on
  std::vector<std::string> cpu_features;  // those of avx2 avx512f avx512_bf16 amx_bf16 present
  std::vector<std::string> cpu_missing;   // the others
  double memory_bytes = 0;                // MemTotal
  double memory_available_bytes = 0;      // MemAvailable
  std::string torch_version;              // LibTorch's, e.g. "1.13.1"
  bool torch_cuda = false;                // this LibTorch has its CUDA library (libtorch_cuda)
  bool torch_nccl = false;                // c10d's NCCL process group is compiled in
  BlasInfo blas;                          // the BLAS that takes LibTorch's fp32 CPU matrix products
  int gpus = 0;                           // CUDA devices LibTorch sees
  CudaInfo gpu;                           // device 0 as the driver reports it (ok = false: none)
};

MachineFacts machine_facts();

// The CPUs this process may run on (its affinity) and the physical cores they are on (fewer where
// they include hyperthreads of one core; as many where the topology is not readable).
struct CpuCount {
  int logical = 1, physical = 1;
};
CpuCount cpu_count();

// The CPU in words, e.g. "AMD EPYC 7B13, 2 cores (avx2 avx512f avx512_bf16; no amx_bf16)".
std::string describe_cpu(const MachineFacts& m);
// One line for logs, e.g. "AMD EPYC 7B13, 2 cores (avx2 avx512f avx512_bf16; no amx_bf16), 23.4 GiB,
// LibTorch 1.13.1 CPU-only, BLAS OpenBLAS 0.3.21 (OpenMP, SkylakeX kernels)".
std::string describe_machine(const MachineFacts& m);

}  // namespace slm::host
