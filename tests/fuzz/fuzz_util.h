// tests/fuzz/fuzz_util.h: shared by the fuzz targets: a private temp folder and "expected
// failures" (UserError is the right answer to bad input; anything else escapes and is a finding).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/error.h"

namespace slm::fuzz {

inline const std::string& temp_dir() {
  static const std::string* dir = [] {  // never destroyed: the exit handler below still reads it
    auto* d = new std::string(std::filesystem::temp_directory_path() / ("slm_fuzz_" + std::to_string(::getpid())));
    std::filesystem::create_directories(*d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(temp_dir(), ec); });
    return d;
  }();
  return *dir;
}

inline std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

// Runs f; a UserError (a clear message for bad input) is fine, every other exception escapes.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const UserError&) {
  }
}

}  // namespace slm::fuzz
