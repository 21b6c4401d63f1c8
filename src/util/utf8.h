// util/utf8.h: UTF-8 at the edges, where text from the user's files is cut, shown or written.
// Owns: character boundaries (so a cut never splits a character), repair of invalid sequences (each
// replaced by U+FFFD, as browsers and Python's errors="replace" do) and a width-limited prefix.
// Does not own: tokenization (tokenizer/), which works on raw bytes.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace slm {

// i moved back to the start of the character it falls inside (at most 3 bytes back; i itself
// when s[i] is not a continuation byte or i is at the end).
size_t utf8_char_start(std::string_view s, size_t i);
// i moved forward past the continuation bytes of the character before it (at most 3 bytes).
size_t utf8_char_end(std::string_view s, size_t i);
// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool utf8_valid(std::string_view s);
// s with every maximal ill-formed subsequence replaced by U+FFFD (s itself when valid).
std::string utf8_repair(std::string_view s);
// The longest prefix of s of at most max_bytes that ends on a character boundary.
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);

}  // namespace slm
