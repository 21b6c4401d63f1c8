// host/cuda_info.cpp: see cuda_info.h. Uses five driver-API entry points by name.
#include "host/cuda_info.h"

#include <dlfcn.h>

namespace slm::host {

CudaInfo cuda_info(int device) {
  CudaInfo info;
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) return info;
  using Init = int (*)(unsigned);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  using Attr = int (*)(int*, int, int);
  auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<Get>(::dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<Name>(::dlsym(lib, "cuDeviceGetName"));
  auto attr = reinterpret_cast<Attr>(::dlsym(lib, "cuDeviceGetAttribute"));
  using Mem = int (*)(size_t*, int);
  auto mem = reinterpret_cast<Mem>(::dlsym(lib, "cuDeviceTotalMem_v2"));
  int dev = 0;
  char buf[256] = {0};
  constexpr int kMajor = 75, kMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/_MINOR
  if (init && get && name && attr && init(0) == 0 && get(&dev, device) == 0 &&
      name(buf, sizeof buf - 1, dev) == 0 && attr(&info.major, kMajor, dev) == 0 &&
      attr(&info.minor, kMinor, dev) == 0) {
    info.ok = true;
    info.name = buf;
    size_t bytes = 0;
    if (mem && mem(&bytes, dev) == 0) info.memory_bytes = static_cast<double>(bytes);
  }
  return info;  // the library stays loaded: LibTorch's CUDA runtime uses it too
}

}  // namespace slm::host
