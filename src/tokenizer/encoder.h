// tokenizer/encoder.h: text -> token ids with a BpeModel.
// Owns: Encoder (pre-tokenizer + per-word BPE + word cache). Not thread-safe: one per thread;
// many Encoders may share one BpeModel. Merges follow GPT-2: repeatedly merge the adjacent pair
// of lowest rank, leftmost first (a heap over a linked list: O(n log n) per word).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe_model.h"
#include "tokenizer/pretokenize.h"

namespace slm::tokenizer {

class Encoder {
 public:
  explicit Encoder(const BpeModel& model, size_t cache_entries = 1 << 20);
  // Appends the ids of `text` to `out`. Special-token text is encoded as ordinary text.
  void encode(std::string_view text, std::vector<uint32_t>& out);
  // Like encode, but occurrences of special tokens' text become their ids.
  void encode_with_specials(std::string_view text, std::vector<uint32_t>& out);
  // BPE of one pre-tokenized word (no cache).
  void encode_word(std::string_view word, std::vector<uint32_t>& out) const;

 private:
  const BpeModel& model_;
  Pretokenizer pretok_;
  std::unordered_map<std::string, std::vector<uint32_t>> cache_;
  size_t cache_entries_;
};

}  // namespace slm::tokenizer
