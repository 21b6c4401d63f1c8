// util/byte_size.h: a size in MiB from a setting (parallel.bucket_mb, sync.chunk_mb) as bytes.
// Any positive value is accepted there, so a huge one (1e308) means "all of it": it is held to
// kMaxMiB (1 TiB, more than any tensor slm holds), which the cast to int64 bytes cannot overflow.
#pragma once
#include <algorithm>
#include <cstdint>

namespace slm {

inline constexpr double kMaxMiB = 1048576.0;  // 1 TiB

// mib MiB in bytes, rounded down; held to [0, kMaxMiB] MiB (NaN and negative sizes: 0).
inline int64_t mib_bytes(double mib) {
  return static_cast<int64_t>((mib > 0 ? std::min(mib, kMaxMiB) : 0.0) * 1024 * 1024);
}

}  // namespace slm
