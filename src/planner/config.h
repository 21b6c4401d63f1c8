// planner/config.h: the [planner] configuration section: what `parallel.plan = "auto"` (and the
// defaults of `slm plan auto`) plan for and optimise. Owns: PlannerConfig, validate. Pure.
#pragma once
#include <string>

namespace slm::planner {

struct PlannerConfig {
  std::string cluster;             // cluster description (the testbed TOML with devices); "" = sites
                                   // from the probe at start, every rank this machine's device
  std::string profile;             // compute profile of `slm profile`; "" = measured at start (cached)
  std::string objective = "time";  // time (step time) | cost (tokens per dollar)
  std::string strategy = "search"; // search | study-heuristic (the reference study's rule)
  bool allow_lossy = false;        // may choose bf16 gradients across sites or DiLoCo
  bool all_ranks = false;          // use every rank; false = may leave sites out (never rank 0's:
                                   // it hosts the rendezvous store), their ranks exit at start
};

// UserError (one line) for a bad value.
void validate(const PlannerConfig& c);

}  // namespace slm::planner
