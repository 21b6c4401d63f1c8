// host/blas_info.h: which BLAS computes LibTorch's fp32 matrix products on the CPU, read from the
// running process: the library that the symbol `sgemm_` resolves to. PyPI's LibTorch carries MKL and
// exports sgemm_ through the symbol table, so a libblas.so.3 loaded ahead of it (FAISS's) would take
// its products: CMakeLists.txt links LibTorch first. Debian's LibTorch 1.13 calls the system's
// libblas.so.3, which slm's RPATH points at OpenBLAS's OpenMP flavour. Debian's reference BLAS
// (libblas3, the netlib code) is some 40x slower per core (measured: 4 against 157 GFLOP/s for
// MKL), and OpenBLAS's pthreads flavour oversubscribes the cores: `slm doctor` warns about both and
// about a shadowed LibTorch BLAS.
// Owns: BlasInfo, blas_info, BlasWarning, blas_warning.
#pragma once
#include <string>

namespace slm::host {

struct BlasInfo {
  std::string file;          // the library whose sgemm_ is in use ("" when none is loaded)
  std::string kind;          // "MKL in LibTorch", "OpenBLAS 0.3.21 (OpenMP, SkylakeX kernels)", "reference BLAS", ...
  bool torch_own = false;    // LibTorch defines sgemm_ itself (PyPI's builds)
  bool shadowed = false;     // LibTorch defines it, yet another library's takes the calls
  bool slow = false;         // the reference BLAS
  bool own_threads = false;  // OpenBLAS's pthreads flavour: its threads run beside LibTorch's OpenMP ones
};

// Read once per process (the loaded libraries do not change).
const BlasInfo& blas_info();

// What is wrong with it in one line (empty when nothing is) and the command that fixes it: for
// `slm doctor` and a warning in `slm train`'s header on CPUs.
struct BlasWarning {
  std::string problem, fix;
};
BlasWarning blas_warning(const BlasInfo& b);

}  // namespace slm::host
