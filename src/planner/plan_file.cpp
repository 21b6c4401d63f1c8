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

std::string candidate_to_toml(const Candidate& c, int world, const std::string& header) {
  std::string out;
  std::istringstream in(header);
  for (std::string line; std::getline(in, line);) out += "# " + line + "\n";
  out += parallel::plan_to_toml(plan_for_job(c, world));
  out += fmt::format("\n[set.dist]\nranks_per_site = {}\ncompress = {}\nchannels = {}\n", c.ranks_per_site,
                     c.compress ? "true" : "false", c.channels);
  out += fmt::format("\n[set.parallel]\nzero_scope = \"{}\"\n", c.zero_site ? "site" : "dp");
  out += fmt::format("\n[set.model]\nrecompute = {}\n", c.recompute ? "true" : "false");
  if (c.diloco_steps > 0)
    out += fmt::format("\n[set.sync]\nmode = \"diloco\"\ninner_steps = {}\ncompress = \"int8\"\n", c.diloco_steps);
  else
    out += "\n[set.sync]\nmode = \"step\"\n";
  return out;
}

}  // namespace slm::planner
