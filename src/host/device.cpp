// host/device.cpp: see device.h. The current device is set through c10's device-guard registry,
// which LibTorch's CUDA library fills in when loaded: the same call in CPU-only and CUDA builds.
#include "host/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include "comm/env.h"
#include "util/error.h"

#include <fmt/format.h>

namespace slm::host {

std::string resolve_device(const std::string& requested, const std::string& backend) {
  const bool cuda = torch::cuda::is_available();
  if (requested == "cuda" && !cuda) throw UserError("system: device \"cuda\" but no CUDA device is available");
  const std::string device = requested == "auto" ? (cuda ? "cuda" : "cpu") : requested;
  if (device != "cuda") return device;
  const comm::LaunchEnv env = comm::read_launch_env();
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if ((backend == "nccl" || backend == "auto") && env.local_world > gpus)
    throw UserError(fmt::format("dist: {} ranks on this host but {} GPU(s) visible; NCCL needs a GPU per rank "
                                "(start {} per host, or set dist.backend = \"gloo\")",
                                env.local_world, gpus, gpus));
  const int index = env.local_rank % gpus;
  c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->setDevice(c10::Device(c10::DeviceType::CUDA, index));
  return device;
}

}  // namespace slm::host
