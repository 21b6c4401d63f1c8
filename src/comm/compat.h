// comm/compat.h: every LibTorch-version difference of c10d in one place (the rest: util/torch_compat.h).
// 1.x: ProcessGroupGloo / ProcessGroupNCCL derive from c10d::ProcessGroup; 2.x: from c10d::Backend.
// Gloo gained reduce_scatter in 2.x, but (measured on 2.15, bench/micro/gloo_bytes.py) it moves as many
// bytes as an all-reduce, so collectives.cpp keeps its all-reduce form on Gloo; NCCL's is a real one.
// Gloo gained bf16/fp16: in 2.15 they travel as they are (half of fp32's bytes, measured); older
// versions get an fp32 copy on the wire.
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "util/torch_compat.h"
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace slm::comm::compat {

#if SLM_TORCH_AT_LEAST(2, 0)
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif
// Set from the first version where it was measured (2.15); earlier 2.x may have it too.
constexpr bool kGlooHasHalfTypes = SLM_TORCH_AT_LEAST(2, 15);
// torchrun 2.x's agent hosts the rendezvous store (TORCHELASTIC_USE_AGENT_STORE=True); a 1.x
// TCPStore client's requests to it never return (seen: Debian's 1.13 under PyPI's torchrun 2.15).
constexpr bool kUsesAgentStore = SLM_TORCH_AT_LEAST(2, 0);

// Ends a backend's communicators, so that device work waiting on a lost peer returns:
// c10d::Backend::abort (2.4 on; earlier versions have nothing to call, and the process's exit ends them).
inline void abort_backend(BackendBase& pg) {
#if SLM_TORCH_AT_LEAST(2, 4)
  pg.abort();
#else
  (void)pg;
#endif
}

}  // namespace slm::comm::compat
