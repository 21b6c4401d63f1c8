// tests/util/measure_cache_test.cpp: the measurement cache: a value stored under a key is read
// back, other keys of the file are kept, and a missing or damaged file is a miss (measured again).
#include "util/measure_cache.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/cache_dir.h"

namespace slm {

TEST(MeasureCache, StoresReadsAndMissesCleanly) {
  const test::TempHome home("measure_cache");
  EXPECT_FALSE(cached_measurement("peak.json", "cpu fp32").has_value());  // no file yet
  store_measurement("peak.json", "cpu fp32", 1.5e11);
  store_measurement("peak.json", "cpu bf16", nlohmann::json{{"fp32_s", 1.0}});
  ASSERT_TRUE(cached_measurement("peak.json", "cpu fp32").has_value());
  EXPECT_EQ(cached_measurement("peak.json", "cpu fp32")->get<double>(), 1.5e11);  // kept beside the second
  EXPECT_EQ(cached_measurement("peak.json", "cpu bf16")->at("fp32_s").get<double>(), 1.0);
  EXPECT_FALSE(cached_measurement("peak.json", "gpu").has_value());
  EXPECT_FALSE(cached_measurement("other.json", "cpu fp32").has_value());
  test::write(cache_dir() + "/peak.json", "{ damaged");
  EXPECT_FALSE(cached_measurement("peak.json", "cpu fp32").has_value());
  store_measurement("peak.json", "cpu fp32", 2.0);  // a damaged file is replaced
  EXPECT_EQ(cached_measurement("peak.json", "cpu fp32")->get<double>(), 2.0);
}

}  // namespace slm
