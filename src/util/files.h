// util/files.h: reading inputs and writing outputs safely.
// Owns: whole-file reads, read-only memory maps, atomic file writes (temp name + fsync + rename)
// and atomic output directories (built under a temp name, renamed into place on commit, removed
// if never committed). Every failure is a UserError naming the path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace slm {

std::string read_file(const std::string& path);

// Read-only memory map of a whole file. An empty file maps to data() == nullptr, size() == 0.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Writes `path` atomically: bytes go to "<path>.tmp.<pid>", commit() fsyncs and renames.
// Destroyed uncommitted (an error or interrupt), the temp file is removed and `path` untouched.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  void write_at(int64_t offset, const void* data, size_t n);  // overwrite earlier bytes
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Atomically as AtomicFile, where `path` is a regular file or new; a device or pipe that exists
// there (/dev/null, a FIFO) is written in place, not replaced.
void write_file_atomic(const std::string& path, std::string_view contents);

// An output directory built atomically. The constructor refuses an existing `path` unless
// `overwrite`; files go under dir() (a temp sibling); commit() renames it to `path` (replacing
// an old one only then). Destroyed uncommitted, the temp directory is removed.
class AtomicDir {
 public:
  AtomicDir(std::string path, bool overwrite);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;
  const std::string& dir() const { return tmp_; }
  void commit();

 private:
  std::string path_, tmp_;
  bool committed_ = false;
};

// Fails now (as AtomicDir would at the end) when `path` could not be made: it exists without
// `overwrite`, or its folder is read-only or not a folder. Call before long work that ends in one.
void check_output_dir(const std::string& path, bool overwrite);

bool path_exists(const std::string& path);

}  // namespace slm
