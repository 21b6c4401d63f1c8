// tokenizer/pretokenize.h: GPT-2's pre-tokenization (splitting text into words before BPE).
// Owns: the PCRE2 (JIT) form of GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matched over raw bytes with PCRE2_MATCH_INVALID_UTF. Invalid UTF-8 bytes match no branch;
// each maximal run of them becomes a piece of its own, so the pieces always cover the input and
// encode->decode is the identity for any byte string. One Pretokenizer per thread.
#pragma once
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace slm::tokenizer {

class Pretokenizer {
 public:
  Pretokenizer();
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;
  // Calls fn for each piece, in order; the pieces concatenate to `text`.
  void split(std::string_view text, const std::function<void(std::string_view)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Offsets in `text` where a chunk may start such that pre-tokenizing the chunks separately gives
// exactly the pieces of the whole: just after a '\n' with a non-space ASCII byte on both sides.
// That '\n' is a whitespace run of its own, so it is a piece in either case ("\s+(?!\S)" would
// split a longer run differently when cut), and no branch matches across it.
std::vector<size_t> safe_split_points(std::string_view text, size_t target_chunk_bytes);

// `text` cut at safe split points into pieces of about target_chunk_bytes (the whole text if
// it is shorter), for handing one large document to several threads.
std::vector<std::string_view> split_for_threads(std::string_view text, size_t target_chunk_bytes);

}  // namespace slm::tokenizer
