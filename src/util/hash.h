// util/hash.h: content identities and checksums (XXH3, 128-bit, hex).
// Owns: hash_hex for bytes and files. Used to name a tokenizer's identity in manifests and to
// checksum files; not for security.
#pragma once
#include <string>
#include <string_view>

namespace slm {

std::string hash_hex(std::string_view bytes);  // 32 hex digits
std::string hash_file_hex(const std::string& path);

}  // namespace slm
