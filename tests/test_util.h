// tests/test_util.h: helpers shared by the unit tests: a temporary directory, a temporary HOME (for
// the measurement cache), file writing, and the location of ../shared/data (tests that need it call GTEST_SKIP when it is absent).
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace slm::test {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/slm_test_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// HOME pointed at a fresh folder for the object's life (so ~/.cache/slmtrain starts empty).
struct TempHome {
  std::string dir, saved;
  explicit TempHome(const std::string& name)
      : dir("/tmp/slm_test_" + name + "_home_" + std::to_string(::getpid())),
        saved(std::getenv("HOME") ? std::getenv("HOME") : "") {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    ::setenv("HOME", dir.c_str(), 1);
  }
  ~TempHome() {
    ::setenv("HOME", saved.c_str(), 1);
    std::filesystem::remove_all(dir);
  }
};

inline void write(const std::string& path, const std::string& contents) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << contents;
}

// The source tree: SLM_SOURCE_FROM_BINARY is relative to the folder of the test program.
inline std::filesystem::path source_dir() {
  return (std::filesystem::canonical("/proc/self/exe").parent_path() / SLM_SOURCE_FROM_BINARY).lexically_normal();
}

inline std::string shared_data(const std::string& name) {
  std::string p = (source_dir() / "../shared/data" / name).lexically_normal().string();
  return std::filesystem::exists(p) ? p : "";
}

// A few paragraphs of English for tests that must not depend on ../shared.
inline std::string sample_text() {
  std::string s;
  for (int i = 0; i < 20; ++i)
    s += "The quick brown fox jumps over the lazy dog. It's 2026, and we're training tokenizers!\n"
         "    Indented code: for (int i = 0; i < 10; ++i) { x += i * 3.14; }\n\n"
         "Numbers 12345 and 67890; unicode: café, naïve, Žluťoučký kůň, 東京, emoji 🙂.\n";
  return s;
}

}  // namespace slm::test
