// tests/planner/devices_test.cpp: the device table's lookups and the speed a device achieves.
#include <gtest/gtest.h>

#include "planner/devices.h"

namespace slm::planner {
namespace {

TEST(Devices, TableLookupsAndAchievedSpeed) {
  ASSERT_NE(find_device("a100-40gb"), nullptr);
  EXPECT_EQ(find_device("A100")->name, "A100-40GB");
  EXPECT_EQ(find_device("V100"), nullptr);
  const DeviceSpec& t4 = *find_device("T4");
  EXPECT_DOUBLE_EQ(peak_flops(t4, "fp16"), 65e12);
  EXPECT_DOUBLE_EQ(peak_flops(t4, "bf16"), 8.1e12);  // no bf16 units: fp32
  EXPECT_DOUBLE_EQ(achieved_flops(t4, "fp16", 512), 65e12 * t4.efficiency / 2);
}

}  // namespace
}  // namespace slm::planner
