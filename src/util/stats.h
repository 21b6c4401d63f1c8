// util/stats.h: medians of samples (timings, probe results, metrics) and the least-squares line
// through timings over sizes. Owns median, upper_median, Line, least_squares_line.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace slm {

// The middle value; for an even count the mean of the two middle ones; 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The value at index n / 2 once sorted (the upper of the two middle ones for an even count, as
// bench/studies/planner_study.sh computes its medians: one of the measured values); 0 for none.
inline double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// y = intercept + slope · x, the least-squares line through (xs[i], ys[i]); slope 0 (the mean)
// where the xs do not vary or there are none.
struct Line {
  double intercept = 0, slope = 0;
};
inline Line least_squares_line(const std::vector<int64_t>& xs, const std::vector<double>& ys) {
  const size_t n = std::min(xs.size(), ys.size());
  if (n == 0) return {};
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += static_cast<double>(xs[i]) / static_cast<double>(n), my += ys[i] / static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = static_cast<double>(xs[i]) - mx;
    sxy += dx * (ys[i] - my), sxx += dx * dx;
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  return {my - slope * mx, slope};
}

}  // namespace slm
