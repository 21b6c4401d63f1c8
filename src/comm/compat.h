// comm/compat.h: every LibTorch-version difference of c10d in one place.
// 1.x: ProcessGroupGloo / ProcessGroupNCCL derive from c10d::ProcessGroup; 2.x: from c10d::Backend.
// Gloo gained reduce_scatter in 2.x; 1.13 has none (we build it from allreduce, see collectives).
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace slm::comm::compat {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
constexpr bool kGlooHasReduceScatter = true;
#else
using BackendBase = c10d::ProcessGroup;
constexpr bool kGlooHasReduceScatter = false;
#endif

}  // namespace slm::comm::compat
