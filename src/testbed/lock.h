// testbed/lock.h: one `slm testbed` command at a time per testbed name. Namespaces, links and
// cgroups are global to the machine, so a second `run` (or `up`, `down`) of the same testbed would
// tear down the first's live cluster; instead it is refused in one line naming the holder.
#pragma once
#include <string>

namespace slm::testbed {

// Holds an exclusive flock on /run/lock/slm-testbed-<name>.lock (/tmp where /run/lock is missing)
// for its lifetime; the kernel releases it if the process dies. UserError if another process holds it.
struct TestbedLock {
  explicit TestbedLock(const std::string& name);
  ~TestbedLock();
  TestbedLock(const TestbedLock&) = delete;
  TestbedLock& operator=(const TestbedLock&) = delete;
  int fd = -1;
};

}  // namespace slm::testbed
