// util/wait_time.h: a time in seconds from a setting or an option (dist.timeout_s, --grace, ...)
// as what the clocks and c10d take. Any finite value is accepted there, so a huge one (1e308 s)
// means "wait as long as it takes": it is held to kMaxWaitS, which no conversion to milliseconds
// or nanoseconds and no deadline on the steady clock overflows (a cast of 1e308 s to int64
// milliseconds is undefined; on x86 it gave a negative timeout).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>

namespace slm {

inline constexpr double kMaxWaitS = 1e9;  // ~31 years

// s held to [0, kMaxWaitS] (NaN and negative times: 0).
inline double held_wait_s(double s) { return s > 0 ? std::min(s, kMaxWaitS) : 0.0; }

inline std::chrono::milliseconds wait_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(held_wait_s(s) * 1000));
}

// The steady clock's time s seconds from now.
inline std::chrono::steady_clock::time_point deadline_after(double s) {
  using Clock = std::chrono::steady_clock;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(held_wait_s(s)));
}

}  // namespace slm
