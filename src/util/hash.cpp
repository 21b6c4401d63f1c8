// util/hash.cpp: see hash.h.
#include "util/hash.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "util/files.h"

namespace slm {

std::string hash_hex(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

double hash_number(std::string_view text) {
  return static_cast<double>(XXH3_64bits(text.data(), text.size()) % (1ull << 50) + 1);
}

std::string hash_file_hex(const std::string& path) {
  MappedFile m(path);
  return hash_hex(m.view());
}

}  // namespace slm
