// data/shard.h: binary token shards, in llm.c's .bin layout so either tool reads the other's.
// Owns: the header format, ShardWriter (streaming, atomic) and Shard (validated memory map).
// Layout: 256 little-endian int32 header words, then the tokens.
//   header[0] magic  20240520 (uint16 tokens, llm.c GPT-2) | 20240801 (uint32 tokens, llm.c)
//   header[1] version 1 (uint16)                           | 7 (uint32)
//   header[2] number of tokens (fits int32: a shard holds < 2^31 tokens)
//   header[3] bytes per token (2 | 4; slmtrain's addition, llm.c ignores it)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/files.h"

namespace slm::data {

constexpr int kHeaderInts = 256;
constexpr int64_t kHeaderBytes = kHeaderInts * 4;
constexpr int32_t kMagicU16 = 20240520, kVersionU16 = 1;
constexpr int32_t kMagicU32 = 20240801, kVersionU32 = 7;
constexpr int64_t kMaxShardTokens = INT32_MAX;

inline int bytes_per_token_for(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

// Writes one shard: header placeholder, tokens, then the real header; commit() renames it in.
class ShardWriter {
 public:
  ShardWriter(const std::string& path, int bytes_per_token);
  void append(const uint32_t* tokens, size_t n);
  int64_t tokens() const { return count_; }
  void commit();

 private:
  AtomicFile file_;
  int bpt_;
  int64_t count_ = 0;
  std::vector<uint16_t> buf16_;
};

// A validated, memory-mapped shard. Throws UserError naming the file on a bad magic, version or
// size (a truncated or padded file).
class Shard {
 public:
  explicit Shard(const std::string& path);
  int64_t size() const { return tokens_; }
  int bytes_per_token() const { return bpt_; }
  uint32_t operator[](int64_t i) const {
    return bpt_ == 2 ? reinterpret_cast<const uint16_t*>(base_)[i]
                     : reinterpret_cast<const uint32_t*>(base_)[i];
  }
  const std::string& path() const { return map_.path(); }
  std::string_view file_bytes() const { return map_.view(); }  // header and tokens, for checksums

 private:
  MappedFile map_;
  const uint8_t* base_ = nullptr;
  int bpt_ = 2;
  int64_t tokens_ = 0;
};

// Index of the first token >= vocab_size, or -1 if all are inside the vocabulary (a full scan,
// vectorised: blocks' maxima first).
int64_t find_token_outside(const Shard& s, int64_t vocab_size);

}  // namespace slm::data
