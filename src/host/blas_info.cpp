// host/blas_info.cpp: see blas_info.h.
#include "host/blas_info.h"

#include <dlfcn.h>

#include <ATen/Context.h>
#include <filesystem>
#include <fmt/format.h>

namespace slm::host {
namespace {

// The file of the loaded library that defines the symbol at p ("" for a null p).
std::string library_of(void* p) {
  Dl_info info{};
  if (p == nullptr || ::dladdr(p, &info) == 0 || info.dli_fname == nullptr) return "";
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : real.string();
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// OpenBLAS's threading as openblas_get_parallel reports it: 0 sequential, 1 pthreads, 2 OpenMP (-1: unknown).
int openblas_parallel() {
  const auto parallel = reinterpret_cast<int (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  return parallel != nullptr ? parallel() : -1;
}

// OpenBLAS's own description: version, threading and the kernels it picked for this CPU.
std::string describe_openblas(int parallel) {
  using Text = char* (*)();
  const auto config = reinterpret_cast<Text>(::dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const auto core = reinterpret_cast<Text>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  std::string version = "OpenBLAS";
  if (config != nullptr) {  // "OpenBLAS 0.3.21 NO_AFFINITY SkylakeX MAX_THREADS=64"
    const std::string c = config();
    version = c.substr(0, c.find(' ', c.find(' ') + 1));
  }
  const char* threads = parallel == 0   ? "sequential"
                        : parallel == 1 ? "pthreads"
                        : parallel == 2 ? "OpenMP"
                                        : "threading unknown";
  return fmt::format("{} ({}, {} kernels)", version, threads, core != nullptr ? core() : "unknown");
}

BlasInfo read_blas_info() {
  BlasInfo b;
  b.file = library_of(::dlsym(RTLD_DEFAULT, "sgemm_"));
  if (void* torch = ::dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD)) {
    // dlsym on a handle searches the library's dependencies too: LibTorch's own only if defined in it.
    b.torch_own = contains(library_of(::dlsym(torch, "sgemm_")), "libtorch_cpu");
    ::dlclose(torch);
  }
  b.shadowed = b.torch_own && !contains(b.file, "libtorch_cpu");
  if (b.file.empty()) {
    b.kind = "none loaded";
  } else if (contains(b.file, "libtorch_cpu")) {
    b.kind = at::hasMKL() ? "MKL in LibTorch" : "LibTorch's own";
  } else if (contains(b.file, "openblas")) {
    const int parallel = openblas_parallel();
    b.kind = describe_openblas(parallel);
    b.own_threads = parallel == 1;
  } else if (contains(b.file, "/blas/libblas.so")) {  // Debian's libblas3 alternative
    b.kind = "reference BLAS";
    b.slow = true;
  } else {
    b.kind = std::filesystem::path(b.file).filename().string();
  }
  return b;
}

}  // namespace

const BlasInfo& blas_info() {
  static const BlasInfo b = read_blas_info();  // the libraries a process loaded at start stay
  return b;
}

BlasWarning blas_warning(const BlasInfo& b) {
  if (b.slow)
    return {"fp32 matrix products run on the reference BLAS (" + b.file + "), some 40x slower per core",
            "sudo apt-get install libopenblas0-openmp"};
  if (b.shadowed)
    return {"LibTorch's own BLAS is shadowed by " + b.file + ", loaded ahead of it",
            "build slm with this project's CMakeLists.txt (it links LibTorch first)"};
  if (b.own_threads)
    return {b.kind + " (" + b.file + ") runs its own threads beside LibTorch's: oversubscribed cores",
            "sudo apt-get install libopenblas0-openmp, then bash scripts/setup.sh --build"};
  return {};
}

}  // namespace slm::host
