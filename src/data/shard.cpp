// data/shard.cpp: see shard.h.
#include "data/shard.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "util/error.h"

namespace slm::data {

ShardWriter::ShardWriter(const std::string& path, int bytes_per_token)
    : file_(path), bpt_(bytes_per_token) {
  if (bpt_ != 2 && bpt_ != 4) throw std::logic_error("bytes per token must be 2 or 4");
  std::vector<int32_t> header(kHeaderInts, 0);  // placeholder; the real one is written at commit
  file_.write(header.data(), kHeaderBytes);
}

void ShardWriter::append(const uint32_t* tokens, size_t n) {
  if (count_ + static_cast<int64_t>(n) > kMaxShardTokens)
    throw std::logic_error("shard over 2^31 tokens");
  if (bpt_ == 4) {
    file_.write(tokens, n * 4);
  } else {
    buf16_.assign(tokens, tokens + n);  // callers check ids < 65536 (bytes_per_token_for)
    file_.write(buf16_.data(), n * 2);
  }
  count_ += static_cast<int64_t>(n);
}

void ShardWriter::commit() {
  std::vector<int32_t> header(kHeaderInts, 0);
  header[0] = bpt_ == 2 ? kMagicU16 : kMagicU32;
  header[1] = bpt_ == 2 ? kVersionU16 : kVersionU32;
  header[2] = static_cast<int32_t>(count_);
  header[3] = bpt_;
  file_.write_at(0, header.data(), kHeaderBytes);
  file_.commit();
}

Shard::Shard(const std::string& path) : map_(path) {
  if (static_cast<int64_t>(map_.size()) < kHeaderBytes)
    throw UserError(fmt::format("{}: not a token shard: {} bytes, shorter than the {}-byte header",
                                path, map_.size(), kHeaderBytes));
  int32_t h[4];
  std::memcpy(h, map_.data(), sizeof h);
  if (h[0] == kMagicU16 && h[1] == kVersionU16) {
    bpt_ = 2;
  } else if (h[0] == kMagicU32 && h[1] == kVersionU32) {
    bpt_ = 4;
  } else {
    throw UserError(fmt::format("{}: not a token shard: bad magic/version {}/{}", path, h[0], h[1]));
  }
  tokens_ = h[2];
  int64_t want = kHeaderBytes + tokens_ * bpt_;
  if (tokens_ < 0 || static_cast<int64_t>(map_.size()) != want)
    throw UserError(fmt::format("{}: corrupt shard: header says {} tokens ({} bytes) but the file "
                                "has {} bytes",
                                path, tokens_, want, map_.size()));
  base_ = map_.data() + kHeaderBytes;
}

namespace {
template <class T>
int64_t first_at_least(const T* p, int64_t n, int64_t limit) {
  constexpr int64_t kBlock = 1 << 14;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    T hi = 0;
    for (int64_t i = b; i < e; ++i) hi = std::max(hi, p[i]);  // vectorised
    if (static_cast<int64_t>(hi) < limit) continue;
    for (int64_t i = b; i < e; ++i)
      if (static_cast<int64_t>(p[i]) >= limit) return i;
  }
  return -1;
}
}  // namespace

int64_t find_token_outside(const Shard& s, int64_t vocab_size) {
  const std::string_view bytes = s.file_bytes().substr(kHeaderBytes);
  return s.bytes_per_token() == 2
             ? first_at_least(reinterpret_cast<const uint16_t*>(bytes.data()), s.size(), vocab_size)
             : first_at_least(reinterpret_cast<const uint32_t*>(bytes.data()), s.size(), vocab_size);
}

}  // namespace slm::data
