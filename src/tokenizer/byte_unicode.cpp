// tokenizer/byte_unicode.cpp: see byte_unicode.h.
#include "tokenizer/byte_unicode.h"

#include <cstdint>
#include <vector>

namespace slm::tokenizer {
namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::array<unsigned char, 256> order{};
  std::array<int, 0x200> from_cp{};  // code point -> byte, -1 if none (all cps are < 0x144)
  Tables() {
    from_cp.fill(-1);
    std::vector<int> bs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::array<uint32_t, 256> cp{};
    std::array<bool, 256> printable{};
    for (int b : bs) {
      cp[b] = static_cast<uint32_t>(b);
      printable[b] = true;
    }
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      if (!printable[b]) {
        cp[b] = 256 + n++;
        bs.push_back(b);
      }
    }
    for (int b = 0; b < 256; ++b) {
      to_unicode[b] = utf8(cp[b]);
      from_cp[cp[b]] = b;
      order[b] = static_cast<unsigned char>(bs[b]);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() { return tables().to_unicode; }
const std::array<unsigned char, 256>& base_byte_order() { return tables().order; }

std::string bytes_to_unicode_str(std::string_view bytes) {
  const auto& t = tables().to_unicode;
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += t[c];
  return out;
}

std::optional<std::string> unicode_str_to_bytes(std::string_view s) {
  const auto& from = tables().from_cp;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
      len = 2;
    } else {
      return std::nullopt;  // 3+ byte sequences are outside the alphabet
    }
    if (cp >= from.size() || from[cp] < 0) return std::nullopt;
    out += static_cast<char>(from[cp]);
    i += len;
  }
  return out;
}

}  // namespace slm::tokenizer
