// util/utf8.cpp: see utf8.h. The decoder follows the Unicode standard's table of well-formed
// byte sequences (3.9, table 3-7), so repair replaces exactly what a conforming decoder rejects.
#include "util/utf8.h"

namespace slm {
namespace {

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// At s[i]: how many bytes the character there takes when well-formed (`whole`), else how many
// bytes form the longest prefix of a well-formed sequence (at least 1): the "maximal subpart" that
// one U+FFFD replaces, as Python's errors="replace" and the WHATWG decoder do.
struct Sequence {
  size_t whole = 0, prefix = 1;
};
Sequence sequence_at(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  if (c < 0x80) return {1, 1};
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return {0, 1};
  size_t k = 1;
  if (i + k < s.size() && at(k) >= lo && at(k) <= hi)
    for (++k; k < n && i + k < s.size() && continuation(at(k));) ++k;
  return k == n ? Sequence{n, n} : Sequence{0, k};
}

}  // namespace

size_t utf8_char_start(std::string_view s, size_t i) {
  for (int k = 0; k < 3 && i > 0 && i < s.size() && continuation(static_cast<unsigned char>(s[i])); ++k) --i;
  return i;
}

size_t utf8_char_end(std::string_view s, size_t i) {
  for (int k = 0; k < 3 && i > 0 && i < s.size() && continuation(static_cast<unsigned char>(s[i])); ++k) ++i;
  return i;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_at(s, i).whole;
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_repair(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    const Sequence q = sequence_at(s, i);
    if (q.whole > 0) out.append(s.substr(i, q.whole));
    else out += "\xEF\xBF\xBD";  // U+FFFD
    i += q.whole > 0 ? q.whole : q.prefix;
  }
  return out;
}

std::string_view utf8_prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  return s.substr(0, utf8_char_start(s, max_bytes));
}

}  // namespace slm
