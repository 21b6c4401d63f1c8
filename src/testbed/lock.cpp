// testbed/lock.cpp: see lock.h.
#include "testbed/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <string>

#include "util/error.h"
#include "util/files.h"

namespace slm::testbed {

TestbedLock::TestbedLock(const std::string& name) {
  const std::string dir = path_exists("/run/lock") ? "/run/lock" : "/tmp";
  const std::string path = fmt::format("{}/slm-testbed-{}.lock", dir, name);
  fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(fmt::format("testbed {}: cannot open {}: {}", name, path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    const std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    ::close(fd);
    throw UserError(fmt::format("testbed {} is in use by another slm testbed command (pid {}); wait for it "
                                "or stop it, or give this one another name",
                                name, holder));
  }
  const std::string pid = std::to_string(::getpid());  // only for the message above
  [[maybe_unused]] const bool written = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) > 0;
}

TestbedLock::~TestbedLock() {
  if (fd >= 0) ::close(fd);  // releases the flock
}

}  // namespace slm::testbed
