// parallel/sync_by_time.cpp: see sync_by_time.h.
#include "parallel/sync_by_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "util/error.h"

namespace slm::parallel {

std::vector<double> parse_site_speeds(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" \t", used) != std::string::npos || !std::isfinite(v) || v <= 0)
      throw UserError(fmt::format("sync: site_speeds \"{}\" must be numbers > 0 separated by commas, one per site", text));
    out.push_back(v);
  }
  if (out.empty()) throw UserError("sync: site_speeds is empty");
  return out;
}

std::vector<int64_t> round_steps(const std::vector<double>& speeds, int64_t inner_steps, double max_speedup) {
  const double slowest = *std::min_element(speeds.begin(), speeds.end());
  const double H = static_cast<double>(inner_steps);
  std::vector<int64_t> n;
  for (double v : speeds) n.push_back(static_cast<int64_t>(std::llround(std::min(max_speedup, v / slowest) * H)));
  return n;
}

int64_t steps_before(int64_t n, int64_t inner_steps, int64_t pos) { return pos * n / inner_steps; }

int64_t steps_at(int64_t n, int64_t inner_steps, int64_t j) {
  return steps_before(n, inner_steps, j + 1) - steps_before(n, inner_steps, j);
}

double delta_weight(const std::vector<int64_t>& done, int site) {
  const int64_t total = std::accumulate(done.begin(), done.end(), int64_t{0});
  if (total == 0) return 1.0;
  return static_cast<double>(done.size()) * static_cast<double>(done[static_cast<size_t>(site)]) /
         static_cast<double>(total);
}

}  // namespace slm::parallel
