// train/archive_file.cpp: see archive_file.h.
#include "train/archive_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "util/error.h"

namespace slm::train {

void save_archive(torch::serialize::OutputArchive& a, const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  int err = 0;  // the first failure; later writes are skipped
  a.save_to([&](const void* data, size_t n) -> size_t {
    const char* p = static_cast<const char*>(data);
    for (size_t done = 0; err == 0 && done < n;) {
      const ssize_t w = ::write(fd, p + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) err = w < 0 ? errno : ENOSPC;
      else done += static_cast<size_t>(w);
    }
    return n;  // reported as written even after a failure, so LibTorch never throws mid-archive
  });
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) throw UserError(fmt::format("{}: {}", path, std::strerror(err)));
}

}  // namespace slm::train
