// parallel/sync_config.cpp: see sync_config.h.
#include "parallel/sync_config.h"

#include <fmt/format.h>

#include <cmath>

#include "parallel/sync_by_time.h"
#include "util/error.h"

namespace slm::parallel {

void validate(const SyncConfig& c) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UserError("sync: " + msg);
  };
  need(c.mode == "step" || c.mode == "diloco", fmt::format("mode \"{}\" is not one of step, diloco", c.mode));
  need(c.inner_steps >= 1, fmt::format("inner_steps {} must be >= 1", c.inner_steps));
  need(std::isfinite(c.outer_lr) && c.outer_lr > 0, fmt::format("outer_lr {} must be > 0", c.outer_lr));
  need(std::isfinite(c.outer_momentum) && c.outer_momentum >= 0 && c.outer_momentum < 1,
       fmt::format("outer_momentum {} must be in [0, 1)", c.outer_momentum));
  need(c.fragments >= 1, fmt::format("fragments {} must be >= 1", c.fragments));
  need(c.fragments <= c.inner_steps,
       fmt::format("fragments {} must be <= inner_steps {} (one fragment starts its sync per step at most)",
                   c.fragments, c.inner_steps));
  need(c.delay >= 0 && c.delay < c.inner_steps,
       fmt::format("delay {} must be in [0, inner_steps = {})", c.delay, c.inner_steps));
  need(std::isfinite(c.mix) && c.mix >= 0 && c.mix <= 1, fmt::format("mix {} must be in [0, 1]", c.mix));
  need(c.compress == "none" || c.compress == "bf16" || c.compress == "int8",
       fmt::format("compress \"{}\" is not one of none, bf16, int8", c.compress));
  need(c.int8_chunk >= 1, fmt::format("int8_chunk {} must be >= 1", c.int8_chunk));
  need(c.by == "steps" || c.by == "time", fmt::format("by \"{}\" is not one of steps, time", c.by));
  need(c.by == "steps" || c.fragments == 1,
       fmt::format("by = \"time\" needs fragments = 1 (not {}): the sites' step counts are agreed per sync", c.fragments));
  need(std::isfinite(c.max_speedup) && c.max_speedup >= 1 && c.max_speedup <= 64,
       fmt::format("max_speedup {} must be in [1, 64]", c.max_speedup));
  if (!c.site_speeds.empty()) parse_site_speeds(c.site_speeds);  // UserError if malformed
}

}  // namespace slm::parallel
