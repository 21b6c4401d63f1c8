// tests/model/cpu_rows_test.cpp: the CPU kernels' instruction set (model/cpu_rows.h): what this
// CPU reports, the dtypes each set takes, and a CpuRowsLimit lowering it and restoring it after.
#include "model/cpu_rows.h"

#include <gtest/gtest.h>

#include <string>

#include "model/avx512_rows.h"

namespace slm::model {
namespace {

TEST(CpuRows, FollowsTheCpu) {
  const CpuRows isa = cpu_rows_isa();
  EXPECT_EQ(isa == CpuRows::kAvx512, avx512_rows::cpu_has());
#if defined(__x86_64__)
  if (!avx512_rows::cpu_has()) {
    EXPECT_EQ(isa == CpuRows::kAvx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  }
#else
  EXPECT_EQ(isa, CpuRows::kNone);
#endif
  EXPECT_EQ(cpu_rows_take(c10::ScalarType::Float), isa != CpuRows::kNone);
  EXPECT_EQ(cpu_rows_take(c10::ScalarType::BFloat16), isa == CpuRows::kAvx512);
  EXPECT_FALSE(cpu_rows_take(c10::ScalarType::Half));
  EXPECT_FALSE(cpu_rows_take(c10::ScalarType::Double));
}

TEST(CpuRows, ALimitLowersItUntilItEnds) {
  const CpuRows isa = cpu_rows_isa();
  {
    const CpuRowsLimit none(CpuRows::kNone);
    EXPECT_EQ(cpu_rows_isa(), CpuRows::kNone);
    EXPECT_FALSE(cpu_rows_take(c10::ScalarType::Float));
    EXPECT_EQ(std::string(cpu_rows_describe()), "none");
    {
      const CpuRowsLimit higher(CpuRows::kAvx512);  // never above the CPU's
      EXPECT_EQ(cpu_rows_isa(), isa);
    }
    EXPECT_EQ(cpu_rows_isa(), CpuRows::kNone) << "the inner limit restored the outer one";
  }
  EXPECT_EQ(cpu_rows_isa(), isa);
  if (isa == CpuRows::kNone) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  const CpuRowsLimit avx2(CpuRows::kAvx2);
  EXPECT_EQ(cpu_rows_isa(), CpuRows::kAvx2);
  EXPECT_TRUE(cpu_rows_take(c10::ScalarType::Float));
  EXPECT_FALSE(cpu_rows_take(c10::ScalarType::BFloat16)) << "bf16 needs AVX-512";
  EXPECT_EQ(std::string(cpu_rows_describe()), "AVX2 (fp32)");
}

}  // namespace
}  // namespace slm::model
