// planner/plan_file.cpp: see plan_file.h (and config.h's validate).
#include "planner/plan_file.h"

#include <fmt/format.h>
#include <sstream>

#include "planner/config.h"
#include "util/error.h"

namespace slm::planner {

void validate(const PlannerConfig& c) {
  if (c.objective != "time" && c.objective != "cost")
    throw UserError(fmt::format("planner: objective \"{}\" is not one of time, cost", c.objective));
  if (c.strategy != "search" && c.strategy != "study-heuristic")
    throw UserError(fmt::format("planner: strategy \"{}\" is not one of search, study-heuristic", c.strategy));
}

parallel::Plan plan_for_job(const Candidate& c, int world) {
  parallel::Plan p = c.plan;
  if (c.ranks.size() < static_cast<size_t>(world) && !c.ranks.empty() && c.ranks[0] == 0) p.job_ranks = c.ranks;
  return p;
}

std::vector<Setting> candidate_settings(const Candidate& c) {
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  std::vector<Setting> s = {{"dist", "ranks_per_site", std::to_string(c.ranks_per_site)},
                            {"dist", "compress", flag(c.compress)},
                            {"dist", "channels", std::to_string(c.channels)},
                            {"parallel", "zero_scope", c.zero_site ? "\"site\"" : "\"dp\""},
                            {"parallel", "sequence_parallel", flag(c.sequence_parallel)},
                            {"model", "recompute", flag(c.recompute)}};
  if (c.diloco_steps > 0)  // DiLoCo (chosen only with planner.allow_lossy)
    s.insert(s.end(), {{"sync", "mode", "\"diloco\""},
                       {"sync", "inner_steps", std::to_string(c.diloco_steps)},
                       {"sync", "compress", "\"int8\""}});
  else
    s.push_back({"sync", "mode", "\"step\""});
  return s;
}

std::string candidate_to_toml(const Candidate& c, int world, const std::string& header) {
  std::string out;
  std::istringstream in(header);
  for (std::string line; std::getline(in, line);) out += "# " + line + "\n";
  out += parallel::plan_to_toml(plan_for_job(c, world));
  std::string section;
  for (const Setting& s : candidate_settings(c)) {
    if (s.section != section) out += "\n[set." + (section = s.section) + "]\n";
    out += s.key + " = " + s.value + "\n";
  }
  return out;
}

}  // namespace slm::planner
