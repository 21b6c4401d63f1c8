// util/files.cpp: see files.h.
#include "util/files.h"
#include "util/cache_dir.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "util/error.h"

namespace slm {
namespace fs = std::filesystem;

static UserError io_error(const std::string& path, const char* what) {
  return UserError(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

std::string read_file(const std::string& path) {
  MappedFile m(path);
  return std::string(m.view());
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw io_error(path, "cannot stat");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw UserError(fmt::format("{}: is a directory, expected a file", path));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw io_error(path, "cannot map");
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), tmp_(fmt::format("{}.tmp.{}", path_, ::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error(tmp_, "cannot create");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

namespace {
// All n bytes to fd (retrying short writes and EINTR); `path` names it in the error.
void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw io_error(path, "write failed");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}
}  // namespace

void AtomicFile::write(const void* data, size_t n) { write_all(fd_, data, n, tmp_); }

void AtomicFile::write_at(int64_t offset, const void* data, size_t n) {
  if (::pwrite(fd_, data, n, offset) != static_cast<ssize_t>(n)) throw io_error(tmp_, "write failed");
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw io_error(tmp_, "fsync failed");
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw io_error(tmp_, "close failed");
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) throw io_error(path_, "rename failed");
  committed_ = true;
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or pipe (`-o /dev/null`, /dev/stdout, a FIFO): written in place; renaming over it
    // would replace it by a regular file (as root, /dev/null itself).
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw io_error(path, "cannot open");
    try {
      write_all(fd, contents.data(), contents.size(), path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

AtomicDir::AtomicDir(std::string path, bool overwrite) : path_(std::move(path)) {
  while (!path_.empty() && path_.back() == '/') path_.pop_back();
  if (path_.empty()) throw UserError("output directory: empty path");
  std::error_code ec;
  if (fs::exists(path_, ec) && !overwrite)
    throw UserError(fmt::format("{}: already exists (pass --force to replace it)", path_));
  fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  tmp_ = fmt::format("{}.tmp.{}", path_, ::getpid());
  fs::remove_all(tmp_, ec);
  if (!fs::create_directory(tmp_, ec) || ec)
    throw UserError(fmt::format("{}: cannot create directory: {}", tmp_, ec.message()));
}

void check_output_dir(const std::string& path, bool overwrite) { AtomicDir probe(path, overwrite); }

AtomicDir::~AtomicDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

void AtomicDir::commit() {
  std::error_code ec;
  std::string old;
  if (fs::exists(path_, ec)) {
    old = fmt::format("{}.old.{}", path_, ::getpid());
    fs::rename(path_, old, ec);
    if (ec) throw UserError(fmt::format("{}: cannot move aside: {}", path_, ec.message()));
  }
  fs::rename(tmp_, path_, ec);
  if (ec) throw UserError(fmt::format("{}: cannot rename into place: {}", path_, ec.message()));
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

bool path_exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string cache_dir() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.cache/slmtrain";
}

}  // namespace slm
