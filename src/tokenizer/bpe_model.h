// tokenizer/bpe_model.h: a byte-level BPE vocabulary, immutable once built.
// Owns: BpeModel (id <-> bytes, ranked merges, special tokens), its identity hash, and decode().
// Tokens are raw bytes in memory; the GPT-2 unicode alphabet appears only in files (hf_files).
// Built by bpe_train (training) or hf_files (loading); encoded with by Encoder (encoder.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace slm::tokenizer {

struct MergeInfo {
  int32_t rank;    // position in merges.txt; lower merges first
  int32_t result;  // id of the merged token
};

struct BpeModel {
  std::vector<std::string> id_to_bytes;                    // index = id; a special holds its text
  std::vector<bool> is_special;                            // same length as id_to_bytes
  std::vector<bool> present;                               // false for ids no file defines (holes)
  std::unordered_map<std::string, int32_t> bytes_to_id;    // ordinary (non-special) tokens
  std::unordered_map<std::string, int32_t> special_to_id;  // e.g. "<|endoftext|>" -> 50256
  std::array<int32_t, 256> byte_id{};                      // base token of each byte
  std::vector<std::pair<int32_t, int32_t>> merges;         // in rank order
  std::unordered_map<uint64_t, MergeInfo> merge_of;        // key(a, b) -> rank, result

  int32_t vocab_size() const { return static_cast<int32_t>(id_to_bytes.size()); }
  // Id of a special token, or -1.
  int32_t special_id(const std::string& text) const;
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
};

// Fills the lookup tables from id_to_bytes, is_special, present and merges; checks consistency
// (every byte present, merge parts and results present). `where` names the source in errors.
void index_model(BpeModel& m, const std::string& where);

// Stable identity of the vocabulary and merges (not of file formatting): 32 hex digits.
std::string model_identity(const BpeModel& m);

// Exact inverse of encoding: concatenated bytes of the ids. Throws UserError on an unknown id.
std::string decode(const BpeModel& m, const uint32_t* ids, size_t n);
inline std::string decode(const BpeModel& m, const std::vector<uint32_t>& ids) {
  return decode(m, ids.data(), ids.size());
}

}  // namespace slm::tokenizer
