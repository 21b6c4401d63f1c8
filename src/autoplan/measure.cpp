// autoplan/measure.cpp: see measure.h.
#include "autoplan/measure.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "planner/plan_file.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stats.h"

namespace slm::autoplan {
namespace {
namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// Step times (steps 2..: the first warms up) of a short run of `plan_file` on every rank of the
// cluster; empty when the run failed.
std::vector<double> measure_plan(const MeasureOptions& o, const std::string& plan_file, const std::string& dir,
                                 bool testbed, int world) {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  const std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "slm";
  std::string train = quote(self) + " train";
  if (!o.config.empty()) train += " -c " + quote(o.config);
  for (const std::string& s : o.set) train += " --set " + quote(s);
  train += fmt::format(" --set parallel.plan={} --set run.dir={} --set schedule.max_steps={} --set eval.every=0 "
                       "--set checkpoint.every=0 --set log.every=1",
                       quote(plan_file), quote(dir + "/run"), o.steps);
  const std::string launcher = testbed ? quote(self) + " testbed run " + quote(o.cluster) + " -- "
                                       : fmt::format("{} launch -n {} -- ", quote(self), world);
  const std::string cmd = launcher + train + " > " + quote(dir + "/log") + " 2>&1";
  std::error_code ec;
  fs::remove_all(dir + "/run", ec);
  if (std::system(cmd.c_str()) != 0) return {};
  std::vector<double> steps;
  std::ifstream in(dir + "/run/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step_s")) steps.push_back(j["step_s"].get<double>());
  }
  if (steps.size() < 2) return {};
  steps.erase(steps.begin());
  return steps;
}

bool can_emulate(const testbed::TestbedSpec& spec, const std::string& file) {
  if (::geteuid() != 0) return false;
  try {
    testbed::check_emulatable(spec, file);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

}  // namespace

Measured measure_candidates(const MeasureOptions& o, const std::vector<planner::Ranked>& top,
                            const testbed::TestbedSpec& spec, int world) {
  Measured m;
  m.step_s.assign(top.size(), -1);
  m.round_medians.resize(top.size());
  const bool testbed = can_emulate(spec, o.cluster);
  const std::string tmp = fs::temp_directory_path() / fmt::format("slm-plan-measure-{}", ::getpid());
  std::vector<size_t> runs;  // the candidates that can run: without rank 0 (the store's host) a job cannot start
  for (size_t i = 0; i < top.size() && static_cast<int>(i) < o.count; ++i)
    if (top[i].c.ranks.at(0) == 0) runs.push_back(i);
  std::vector<std::vector<double>> steps(top.size());
  std::vector<bool> failed(top.size(), false);
  for (int round = 0; round < o.rounds; ++round) {
    if (round > 0) std::reverse(runs.begin(), runs.end());
    for (size_t i : runs) {
      if (failed[i]) continue;
      const std::string dir = fmt::format("{}/{}", tmp, i + 1);
      fs::create_directories(dir);
      write_file_atomic(dir + "/plan.toml", planner::candidate_to_toml(top[i].c, world, ""));
      std::fprintf(stderr, "measure %zu/%d, round %d/%d: %s ...\n", i + 1, o.count, round + 1, o.rounds,
                   planner::describe_candidate(top[i].c).c_str());
      const std::vector<double> s = measure_plan(o, dir + "/plan.toml", dir, testbed, world);
      if (s.empty()) {
        failed[i] = true;
        std::fprintf(stderr, "  failed (log: %s/log)\n", dir.c_str());
        continue;
      }
      m.round_medians[i].push_back(upper_median(s));
      steps[i].insert(steps[i].end(), s.begin(), s.end());
    }
  }
  for (size_t i : runs)
    if (!failed[i]) m.step_s[i] = upper_median(steps[i]);
  for (size_t i = 0; i < m.step_s.size(); ++i)
    if (m.step_s[i] > 0 && (m.best < 0 || m.step_s[i] < m.step_s[static_cast<size_t>(m.best)])) m.best = static_cast<int>(i);
  // The runs' folders go, unless a run failed: its message names its log there.
  std::error_code ec;
  if (std::none_of(failed.begin(), failed.end(), [](bool f) { return f; })) fs::remove_all(tmp, ec);
  return m;
}

}  // namespace slm::autoplan
