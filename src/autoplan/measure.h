// autoplan/measure.h: `slm plan auto --measure K`: the top K candidates run for a few steps on the
// real ranks (the testbed when the cluster file can be emulated and we are root, else `slm launch`
// on this machine), in rounds over every candidate with every second round in reverse order, so
// that a slow spell of the machine falls on different candidates; each is judged by the median of
// all its rounds' steps (steps 2..: the first warms up).
// Owns: MeasureOptions, Measured, measure_candidates.
#pragma once
#include <string>
#include <vector>

#include "planner/search.h"
#include "testbed/spec.h"

namespace slm::autoplan {

struct MeasureOptions {
  std::string config;            // the training config file ("" = none)
  std::vector<std::string> set;  // its --set overrides
  std::string cluster;           // the cluster file (the testbed to run on)
  int count = 0;                 // the top K to run
  int steps = 6;                 // steps per run
  int rounds = 2;
};

struct Measured {
  std::vector<double> step_s;                    // per candidate of `top`; -1 = not run or failed
  std::vector<std::vector<double>> round_medians;  // per candidate, each round's median
  int best = -1;                                 // the fastest measured, -1 = none ran
};

// Runs `top`'s first o.count candidates on the `world` ranks of `spec`. Candidates without rank 0
// (the rendezvous store's host) cannot start a job and are left out. Prints a line per run.
Measured measure_candidates(const MeasureOptions& o, const std::vector<planner::Ranked>& top,
                            const testbed::TestbedSpec& spec, int world);

}  // namespace slm::autoplan
