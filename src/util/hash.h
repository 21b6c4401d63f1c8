// util/hash.h: content identities and checksums (XXH3: 128-bit hex; 64-bit for numbers).
// Owns: hash_hex for bytes and files, hash_number for text. Used to name a tokenizer's identity in
// manifests, to checksum files and to compare strings across ranks; not for security.
#pragma once
#include <string>
#include <string_view>

namespace slm {

std::string hash_hex(std::string_view bytes);  // 32 hex digits
std::string hash_file_hex(const std::string& path);
// The text as a number in [1, 2^50], exact in a double: ranks compare strings (a host name, a
// memory pool) through numeric collectives. 0 is left free to mean "none".
double hash_number(std::string_view text);

}  // namespace slm
