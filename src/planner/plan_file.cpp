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

std::string candidate_to_toml(const Candidate& c, const std::string& header) {
  std::string out;
  std::istringstream in(header);
  for (std::string line; std::getline(in, line);) out += "# " + line + "\n";
  out += parallel::plan_to_toml(c.plan);
  out += fmt::format("\n[set.dist]\nranks_per_site = {}\ncompress = {}\nchannels = {}\n", c.ranks_per_site,
                     c.compress ? "true" : "false", c.channels);
  out += fmt::format("\n[set.parallel]\nzero_scope = \"{}\"\n", c.zero_site ? "site" : "dp");
  out += fmt::format("\n[set.model]\nrecompute = {}\n", c.recompute ? "true" : "false");
  return out;
}

}  // namespace slm::planner
