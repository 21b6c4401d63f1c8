// util/progress.h: progress reporting for long work (tokenizer training, encoding).
// Owns: Progress. On a TTY stderr it redraws one line (bar, done/total, rate, ETA) at most
// 10 times a second; otherwise it prints a plain line every `plain_interval_s` seconds, so logs
// of batch jobs stay readable. finish() prints the final line; destroyed unfinished (an error is
// unwinding) it only ends a redrawn line. Quiet mode prints nothing. Thread-safe add().
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace slm {

// "3m07s", or "2h05m" from an hour on: for ETAs and elapsed times.
std::string format_duration(double seconds);

class Progress {
 public:
  // total <= 0 means unknown (no bar, no ETA). unit is e.g. "B" (shown as MB) or "merges".
  Progress(std::string label, int64_t total, std::string unit, bool quiet = false,
           double plain_interval_s = 10.0);
  ~Progress();
  void add(int64_t n);
  void set(int64_t done);
  void finish();  // prints the final line once

 private:
  void maybe_print(bool force);
  std::string line(double elapsed) const;
  std::string label_, unit_;
  int64_t total_;
  std::atomic<int64_t> done_{0};
  bool quiet_, tty_, finished_ = false, printed_ = false;
  double interval_s_;
  std::chrono::steady_clock::time_point start_, last_;
  std::mutex mu_;
};

}  // namespace slm
