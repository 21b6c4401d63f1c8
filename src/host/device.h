// host/device.h: which device a process trains on.
// Owns: resolve_device ("auto" -> cuda where a GPU is visible, else cpu; each
// process of a host takes its own GPU, LOCAL_RANK modulo the GPUs it sees, as torchrun users expect),
// and the refusal of NCCL jobs with more ranks on a host than GPUs (NCCL needs one GPU per rank).
#pragma once
#include <string>

namespace slm::host {

// "auto" -> "cuda" if a GPU is visible, else "cpu". On "cuda", also makes GPU `LOCAL_RANK % visible
// GPUs` this process's current device, so that "cuda" means that GPU from here on. UserError for
// "cuda" without a GPU, and when `backend` is "nccl" (or "auto", NCCL on GPUs) with more ranks on
// this host than visible GPUs.
std::string resolve_device(const std::string& requested, const std::string& backend);

}  // namespace slm::host
