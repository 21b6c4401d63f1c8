// tokenizer/byte_unicode.h: GPT-2's reversible byte <-> printable-unicode mapping.
// Owns: the 256-entry table (byte b -> a UTF-8 string of one printable code point) and its
// inverse. vocab.json and merges.txt store tokens in this alphabet; in memory slmtrain keeps
// tokens as raw bytes and converts only at the file boundary.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace slm::tokenizer {

// GPT-2's bytes_to_unicode(): printable latin-1 bytes map to themselves, the rest to U+0100+.
const std::array<std::string, 256>& byte_to_unicode();

// The order GPT-2 gives the 256 base tokens (ids 0..255 in its vocab.json): the list `bs`.
const std::array<unsigned char, 256>& base_byte_order();

std::string bytes_to_unicode_str(std::string_view bytes);
// Inverse; nullopt if `s` holds a code point outside the 256-symbol alphabet or bad UTF-8.
std::optional<std::string> unicode_str_to_bytes(std::string_view s);

}  // namespace slm::tokenizer
