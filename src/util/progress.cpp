// util/progress.cpp: see progress.h.
#include "util/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>

namespace slm {

Progress::Progress(std::string label, int64_t total, std::string unit, bool quiet,
                   double plain_interval_s)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), quiet_(quiet),
      tty_(::isatty(STDERR_FILENO) == 1), interval_s_(tty_ ? 0.1 : plain_interval_s),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() {
  if (!finished_ && tty_ && printed_) std::fprintf(stderr, "\n");
}

void Progress::add(int64_t n) {
  done_ += n;
  maybe_print(false);
}

void Progress::set(int64_t done) {
  done_ = done;
  maybe_print(false);
}

static std::string amount(int64_t v, const std::string& unit) {
  if (unit == "B") return fmt::format("{:.1f} MB", v / 1e6);
  if (v >= 10'000'000) return fmt::format("{:.1f}M {}", v / 1e6, unit);
  return fmt::format("{} {}", v, unit);
}

std::string format_duration(double s) {
  // Held to 10^12 s in an int64, so that an estimate for 2^40 steps fits (NaN, negative: no time).
  const int64_t t = static_cast<int64_t>((s > 0 ? std::min(s, 1e12) : 0.0) + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60);
  return fmt::format("{}m{:02d}s", t / 60, t % 60);
}

std::string Progress::line(double elapsed) const {
  int64_t d = done_.load();
  double rate = elapsed > 0 ? d / elapsed : 0.0;
  std::string rate_s = unit_ == "B" ? fmt::format("{:.1f} MB/s", rate / 1e6)
                                    : fmt::format("{:.0f} {}/s", rate, unit_);
  if (total_ <= 0)
    return fmt::format("{}: {} | {} | {}", label_, amount(d, unit_), rate_s, format_duration(elapsed));
  double frac = std::min(1.0, static_cast<double>(d) / static_cast<double>(total_));
  std::string eta = rate > 0 ? format_duration((total_ - d) / rate) : "?";
  if (!tty_)
    return fmt::format("{}: {:5.1f}% {} of {} | {} | elapsed {} | eta {}", label_, 100 * frac,
                       amount(d, unit_), amount(total_, unit_), rate_s, format_duration(elapsed), eta);
  const int width = 24;
  int fill = static_cast<int>(frac * width);
  return fmt::format("{} [{}{}] {:5.1f}% {} | {} | eta {}", label_, std::string(fill, '#'),
                     std::string(width - fill, '.'), 100 * frac, amount(d, unit_), rate_s, eta);
}

void Progress::maybe_print(bool force) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  if (!force && std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  printed_ = true;
  std::string s = line(std::chrono::duration<double>(now - start_).count());
  if (tty_) std::fprintf(stderr, "\r%s\033[K", s.c_str());
  else std::fprintf(stderr, "%s\n", s.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (quiet_ || finished_) return;
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  auto now = std::chrono::steady_clock::now();
  std::string s = line(std::chrono::duration<double>(now - start_).count());
  if (tty_) std::fprintf(stderr, "\r%s\033[K\n", s.c_str());
  else std::fprintf(stderr, "%s\n", s.c_str());
  std::fflush(stderr);
}

}  // namespace slm
