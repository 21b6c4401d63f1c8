// host/cuda_info.h: what the GPU is, asked of the CUDA driver directly (dlopen of libcuda), so
// that a CPU-only LibTorch build compiles and runs the same code. Owns: CudaInfo, cuda_info.
#pragma once
#include <string>

namespace slm::host {

struct CudaInfo {
  bool ok = false;     // false: no driver or no device (then the other fields are empty)
  std::string name;    // e.g. "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;  // compute capability; bf16 tensor cores from 8.0 (Ampere)
  double memory_bytes = 0;   // total device memory
};

CudaInfo cuda_info(int device = 0);

}  // namespace slm::host
