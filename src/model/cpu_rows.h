// model/cpu_rows.h: the instruction set slm's CPU kernels run with on this CPU (causal attention's
// rows, the head's cross-entropy rows, GELU, the MLP's bias + GELU, the residual add + LayerNorm),
// and the dtypes each takes: AVX-512 (F, BW, VL) fp32 and bf16, all of the kernels; else AVX2 + FMA
// fp32, all but the residual add + LayerNorm (~0.6% of an AVX2 CPU's fp32 step); else none: ATen's
// operators. A test or bench_kernels may hold a lower one for a while (CpuRowsLimit), to run the
// AVX2 kernels on an AVX-512 CPU.
// Owns: CpuRows, cpu_rows_isa, cpu_rows_take, cpu_rows_describe, CpuRowsLimit.
#pragma once
#include <c10/core/ScalarType.h>

namespace slm::model {

enum class CpuRows { kNone, kAvx2, kAvx512 };

// This CPU's, or a CpuRowsLimit's where that is lower.
CpuRows cpu_rows_isa();

// Whether the kernels take tensors of dtype t here: fp32 with AVX2 or AVX-512, bf16 with AVX-512.
bool cpu_rows_take(c10::ScalarType t);

// For `slm doctor`: "AVX-512 (fp32, bf16)", "AVX2 (fp32)" or "none".
const char* cpu_rows_describe();

// While it lives, cpu_rows_isa() is at most `most` (set and dropped on one thread, no kernel running).
struct CpuRowsLimit {
  explicit CpuRowsLimit(CpuRows most);
  ~CpuRowsLimit();
  CpuRowsLimit(const CpuRowsLimit&) = delete;
  CpuRowsLimit& operator=(const CpuRowsLimit&) = delete;
  CpuRows before;
};

}  // namespace slm::model
