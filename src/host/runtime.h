// host/runtime.h: process settings that make LibTorch fast on CPUs, applied automatically
// (../shared/notes/measured-facts.md measured each one):
//  1. OPENBLAS_CORETYPE=SkylakeX on AVX-512 CPUs that OpenBLAS misdetects, and
//     OMP_WAIT_POLICY=PASSIVE (spinning OpenMP workers starved each other: fp32 steps 13x slower
//     here) with GOMP_SPINCOUNT=10000 (a short spin before sleeping: waking workers for every
//     operator cost 15-20%): all are read when the libraries load, so the process re-executes
//     itself once with them set (reexec_with_blas_env). A value the user set is kept. The same
//     re-exec quiets glog logging (GLOG_minloglevel; 2.x's c10 logger is quieted in configure_process): c10d's
//     own copies of errors we report in one line.
//  2. ATEN_CPU_CAPABILITY=avx512 and 3. glibc malloc thresholds raised (no page-fault storm):
//     set at the top of main (configure_process).
//  4. torch::set_num_threads (configure_cpu_threads).
// The OpenMP flavour of OpenBLAS is selected at link time (CMakeLists.txt, RPATH).
#pragma once

#include <string>

namespace slm::host {

// Whether the command (argv[1]) may run LibTorch operators: all but tokenizer, data and report
// (and --help / --version). Those that do get 1. below: `slm profile` timed fp32 blocks 3-4x
// slower than `slm train` ran them on a VM whose OpenBLAS picked its generic kernel without it.
bool runs_compute(const std::string& command);
// Call first in main with the command line. May not return (execv). No-op when the variables
// are already set or SLM_NO_REEXEC is set.
void reexec_with_blas_env(int argc, char** argv);
// The speed settings of 1. as this process has them, e.g. "OPENBLAS_CORETYPE=SkylakeX
// OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=10000" ("unset" where not): part of measurement_context(),
// since a cached measurement holds only under the settings it was made with.
std::string runtime_settings();
// What a cached measurement (peak, precision, profile) holds under: runtime_settings() plus the
// LibTorch version, the BLAS that takes its fp32 products (host/blas_info.h) and the revision of
// slm's own kernels (model/kernel_threads.h), e.g. "... | LibTorch 2.11.0, BLAS MKL in LibTorch,
// slm kernels r2". The two builds time the same CPU differently (MKL against OpenBLAS, oneDNN
// versions), and both write the same cache folder.
std::string measurement_context();
void configure_process();
void configure_cpu_threads(int threads, int local_ranks);  // 0 = cores / ranks on this machine
int cpu_threads();
// Returns the heap's free memory to the OS (malloc_trim): with the raised trim threshold of 3.,
// memory freed while setting up (the initial parameters copied into flat buffers) would otherwise
// stay in the process's RSS for the whole run. Call once after setup.
void release_free_memory();

}  // namespace slm::host
