// model/cpu_rows.cpp: see cpu_rows.h.
#include "model/cpu_rows.h"

#include <algorithm>
#include <atomic>

#include "model/avx512_rows.h"

namespace slm::model {
namespace {

CpuRows detected() {
#if defined(__x86_64__)
  if (avx512_rows::cpu_has()) return CpuRows::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuRows::kAvx2;
#endif
  return CpuRows::kNone;
}

std::atomic<CpuRows> limit{CpuRows::kAvx512};

}  // namespace

CpuRows cpu_rows_isa() {
  static const CpuRows cpu = detected();
  return std::min(cpu, limit.load(std::memory_order_relaxed));
}

bool cpu_rows_take(c10::ScalarType t) {
  const CpuRows isa = cpu_rows_isa();
  if (t == c10::ScalarType::Float) return isa != CpuRows::kNone;
  return t == c10::ScalarType::BFloat16 && isa == CpuRows::kAvx512;
}

const char* cpu_rows_describe() {
  switch (cpu_rows_isa()) {
    case CpuRows::kAvx512: return "AVX-512 (fp32, bf16)";
    case CpuRows::kAvx2: return "AVX2 (fp32)";
    default: return "none";
  }
}

CpuRowsLimit::CpuRowsLimit(CpuRows most) : before(limit.exchange(most)) {}
CpuRowsLimit::~CpuRowsLimit() { limit.store(before); }

}  // namespace slm::model
