// util/stats.h: medians of samples (timings, probe results, metrics). Owns median, upper_median.
#pragma once
#include <algorithm>
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
// bench/planner_study.sh computes its medians: one of the measured values); 0 for none.
inline double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace slm
