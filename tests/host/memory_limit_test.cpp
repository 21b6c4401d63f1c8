// tests/host/memory_limit_test.cpp: the memory a machine gives its ranks (host/memory_limit.h):
// the lowest cgroup limit on the way up (v2 and v1 file names, "max" and v1's "unlimited" number
// as none), and the machine's own reading.
#include "host/memory_limit.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

using slm::test::write;

TEST(MemoryLimit, LowestCgroupLimitOnTheWayUp) {
  using slm::host::cgroup_memory_limit;
  const slm::test::TempDir t;
  const std::filesystem::path root = t.path, job = root / "slurm" / "job_7", step = job / "step_0";
  std::filesystem::create_directories(step);
  EXPECT_EQ(cgroup_memory_limit(root.string(), step.string()).first, 0.0);  // no limit anywhere
  write((step / "memory.max").string(), "max");
  write((job / "memory.max").string(), "8589934592");
  write((root / "slurm" / "memory.max").string(), "17179869184");
  auto [bytes, folder] = cgroup_memory_limit(root.string(), step.string() + "/");
  EXPECT_EQ(bytes, 8589934592.0);
  EXPECT_EQ(folder, job.string());
  write((step / "memory.max").string(), "4294967296");  // lower still, further down
  EXPECT_EQ(cgroup_memory_limit(root.string(), step.string()).first, 4294967296.0);
  const std::filesystem::path v1 = root / "v1" / "docker";
  write((v1 / "memory.limit_in_bytes").string(), "9223372036854771712");  // v1's "unlimited"
  EXPECT_EQ(cgroup_memory_limit((root / "v1").string(), v1.string()).first, 0.0);
  write((v1 / "memory.limit_in_bytes").string(), "2147483648");
  EXPECT_EQ(cgroup_memory_limit((root / "v1").string(), v1.string()).first, 2147483648.0);
  write((root / "memory.max").string(), "1024");  // above the root given: not read
  EXPECT_EQ(cgroup_memory_limit((root / "v1").string(), v1.string()).first, 2147483648.0);
}

TEST(MemoryLimit, ThisMachine) {
  const slm::host::MemoryLimit m = slm::host::memory_limit();
  EXPECT_GT(m.bytes, 64.0 * 1024 * 1024);  // MemTotal, or a cgroup's lower limit
  EXPECT_FALSE(m.pool.empty());
  EXPECT_FALSE(m.from.empty());
}
